#include "run/SensitivityRun.h"

#include "dist/RankGroup.h"
#include "run/PlanRowEvaluator.h"
#include "util/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace qs {

namespace {

RunRequest studyRequest(const RunRequest& request) {
    RunRequest base = request;
    base.evaluate = true;
    base.analyze = false;
    base.outDir.clear();
    return base;
}

// Every row's figures on every rank, each as its owner measured it: all ranks' tables travel
// (an all-gather of doubles: exact) and row i is read from rank owners[i]'s.
void gatherRows(RankGroup& group, const std::vector<int>& owners,
                std::vector<SensitivityRow>& rows) {
    constexpr size_t kFigures = 6;
    std::vector<double> mine;
    for (const SensitivityRow& r : rows)
        mine.insert(mine.end(), {r.alonePerplexity, r.allButPerplexity, r.aloneKl, r.aloneSameTop,
                                 r.allButKl, r.allButSameTop});
    std::vector<double> all(size_t(group.size()) * mine.size());
    group.allGather(mine.data(), mine.size(), all.data());
    for (size_t i = 0; i < rows.size(); ++i) {
        const double* f = all.data() + size_t(owners[i]) * mine.size() + i * kFigures;
        SensitivityRow& r = rows[i];
        r.alonePerplexity = f[0];
        r.allButPerplexity = f[1];
        r.aloneKl = f[2];
        r.aloneSameTop = f[3];
        r.allButKl = f[4];
        r.allButSameTop = f[5];
    }
}

} // namespace

SensitivityStudy::SensitivityStudy(const RunRequest& request, const PipelineProgress& progress)
    : m_prep(prepareRun(studyRequest(request), progress)), m_ranks(request.ranks),
      m_studyWork(m_prep.handle.moduleTree(), m_prep.model->numBlocks()) {
    const ModuleNode tree = m_prep.handle.moduleTree();
    const int64_t calibTokens = m_prep.calibration.defined() ? m_prep.calibration.numel() : 0;
    const int64_t evalTokens = m_prep.evaluation.numel();
    // The rows to come, by block, from the recipe's resolution on the headers (the calibration
    // plans the same layers): the total work before any is done, and none is nothing to measure.
    m_work = m_studyWork.calibration(calibTokens) + 2 * m_studyWork.evaluation(evalTokens, 0);
    std::map<std::string, int> blockOf; // one pass: a MoE model has tens of thousands
    std::vector<const ModuleNode*> linears;
    tree.collect("linear", linears);
    for (const ModuleNode* l : linears)
        blockOf[l->name] = l->blockIndex;
    std::set<std::string> rows;
    for (const auto& [name, scheme] : m_prep.planner->quantizedLinears(tree))
        if (const auto it = blockOf.find(name);
            it != blockOf.end() && rows.insert(expertRowName(name)).second)
            m_work += 2 * m_studyWork.evaluation(evalTokens, it->second);
    if (rows.empty())
        throw Error("recipe", "global", "the recipe quantizes no layer: nothing to measure");
}

double SensitivityStudy::analysisWork() const {
    // The analysis calibrates on the recipe's samples even where the study needs none (a
    // weight-only recipe): as many windows as asked, of the recipe's length within the model's.
    int64_t tokens = m_prep.calibration.defined() ? m_prep.calibration.numel() : 0;
    if (tokens == 0) {
        int64_t seq = m_prep.recipe.calibration.seqLen;
        const int64_t maxPos = m_prep.handle.config.maxPositions;
        if (maxPos > 0 && seq > maxPos)
            seq = maxPos;
        tokens = m_prep.recipe.calibration.numSamples * seq;
    }
    return m_studyWork.analysis(tokens);
}

std::vector<int> SensitivityStudy::rowOwners(const std::vector<double>& work, int ranks) {
    std::vector<double> load(size_t(std::max(1, ranks)), 0.0);
    std::vector<int> owners;
    for (const double w : work) {
        const size_t r = size_t(std::min_element(load.begin(), load.end()) - load.begin());
        load[r] += w;
        owners.push_back(int(r));
    }
    return owners;
}

SensitivityResult runSensitivity(const RunRequest& request, const PipelineProgress& progress,
                                 const std::function<void(const SensitivityRow&)>& onRow) {
    return SensitivityStudy(request, progress).run(progress, onRow);
}

SensitivityResult SensitivityStudy::run(const PipelineProgress& progress,
                                        const std::function<void(const SensitivityRow&)>& onRow) {
    PreparedRun& prep = m_prep;
    const StudyWork& work = m_studyWork;
    const PipelineOptions options = planKeepingOptions(prep);
    CalibrationPipeline pipeline(*prep.model, *prep.planner, options);

    std::vector<std::vector<LayerPlan>> plans;
    const int blocks = prep.model->numBlocks();
    const int64_t calibTokens = prep.calibration.defined() ? prep.calibration.numel() : 0;
    const int64_t evalTokens = prep.evaluation.numel();
    const double calibrationUnits = work.calibration(calibTokens);
    double total = m_work;
    double done = 0;
    // A step of `units` whose inner progress runs over the blocks from `fromBlock` (the head
    // after them, when the step ends).
    auto part = [&](const std::string& what, double units, int fromBlock, double blocksShare) {
        return [&, what, units, fromBlock, blocksShare](double f, const std::string& m) {
            const double span = double(std::max(1, blocks - fromBlock));
            const double inBlocks = std::clamp((f * blocks - fromBlock) / span, 0.0, 1.0);
            return !progress ||
                   progress(std::min(1.0, (done + units * blocksShare * inBlocks) / total),
                            what + ": " + m);
        };
    };
    PipelineResult calibrated =
        pipeline.run(prep.calibration, {}, part("calibration", calibrationUnits, 0, 1.0));
    plans = std::move(calibrated.plans);
    done += calibrationUnits;

    // Every row differs from the full-precision model (alone) or from the whole recipe
    // (all-but) only from its layer's block on: the two reference evaluations keep each block's
    // input, and a row starts at its layer's block. Blocks before it would compute exactly those
    // inputs again (same weights, same batches), so the rows stay what separate runs give.
    struct Layer {
        std::string name; // the row: a linear, or a pattern over the experts of one layer
        int block;
        std::set<std::string> members;
    };
    std::vector<Layer> layers;
    std::map<std::string, size_t> rowOf;
    for (const auto& block : plans)
        for (const LayerPlan& p : block) {
            if (!p.scheme)
                continue;
            const std::string row = expertRowName(p.name);
            auto it = rowOf.find(row);
            if (it == rowOf.end()) {
                it = rowOf.emplace(row, layers.size()).first;
                layers.push_back({row, p.block, {}});
            }
            layers[it->second].members.insert(p.name);
        }
    if (layers.empty())
        throw Error("recipe", "global", "the recipe quantizes no layer: nothing to measure");
    // The rows as planned (an unfit layer skipped at calibration is no row), spread over the
    // ranks by their work: the work left, this rank's rows.
    const int rank = m_ranks ? m_ranks->rank() : 0;
    std::vector<double> rowWork;
    for (const Layer& layer : layers)
        rowWork.push_back(2 * work.evaluation(evalTokens, layer.block));
    const std::vector<int> owners = rowOwners(rowWork, m_ranks ? m_ranks->size() : 1);
    total = done + 2 * work.evaluation(evalTokens, 0);
    for (size_t i = 0; i < layers.size(); ++i)
        if (owners[i] == rank)
            total += rowWork[i];

    PlanRowEvaluator rows(*prep.model, prep.evaluation, options.maxBatchTokens);
    auto measure = [&](const PlanFilter& filter, const at::Tensor& start, int fromBlock,
                       std::vector<at::Tensor>* blockInputs, const std::string& what) {
        const double units = work.evaluation(evalTokens, fromBlock);
        const PlanRowEvaluator::Measured m =
            rows.measure(pipeline, plans, filter, start, fromBlock, blockInputs,
                         part(what, units, fromBlock, work.blocksShare(fromBlock)));
        done += units;
        return m;
    };
    const PlanFilter everything = [](const LayerPlan&) { return PlanParts{}; };

    SensitivityResult result;
    std::vector<at::Tensor> quantInputs;
    const double referenceUnits = work.evaluation(evalTokens, 0);
    result.fpPerplexity =
        rows.measureReference(pipeline, plans,
                              part("full precision", referenceUnits, 0, work.blocksShare(0)))
            .perplexity;
    done += referenceUnits;
    const PlanRowEvaluator::Measured whole =
        measure(everything, rows.embedded(), 0, &quantInputs, "whole recipe");
    result.fullPerplexity = whole.perplexity;
    result.fullKl = whole.fidelity.klMean;
    result.fullSameTop = whole.fidelity.sameTop;
    std::vector<SensitivityRow> measured(layers.size());
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& layer = layers[i];
        if (owners[i] != rank)
            continue;
        SensitivityRow& row = measured[i];
        row.layer = layer.name;
        const std::string& name = layer.name;
        const std::set<std::string>& members = layer.members;
        const size_t b = size_t(layer.block);
        // Only this layer (its KV-cache output quantizer left off: onlyLayersQuantized).
        const PlanRowEvaluator::Measured alone =
            measure(onlyLayersQuantized(members), rows.referenceInput(layer.block), layer.block,
                    nullptr, name + " alone");
        // The whole recipe with this layer excluded: exclusion covers weights and inputs, and a
        // KV-cache spec still applies to an excluded k/v projection (as in Quark).
        const PlanRowEvaluator::Measured allBut = measure(
            [&members](const LayerPlan& p) {
                return members.count(p.name) ? PlanParts{false, p.outputIsKvCache} : PlanParts{};
            },
            quantInputs[b], layer.block, nullptr, "all but " + name);
        row.alonePerplexity = alone.perplexity;
        row.aloneKl = alone.fidelity.klMean;
        row.aloneSameTop = alone.fidelity.sameTop;
        row.allButPerplexity = allBut.perplexity;
        row.allButKl = allBut.fidelity.klMean;
        row.allButSameTop = allBut.fidelity.sameTop;
        if (onRow && !m_ranks)
            onRow(row);
    }
    if (m_ranks)
        gatherRows(*m_ranks, owners, measured);
    for (size_t i = 0; i < layers.size(); ++i) {
        measured[i].layer = layers[i].name;
        if (onRow && m_ranks)
            onRow(measured[i]);
        result.rows.push_back(measured[i]);
    }
    return result;
}

} // namespace qs
