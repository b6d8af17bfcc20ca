#include "run/SensitivityRun.h"

#include "run/PlanRowEvaluator.h"
#include "util/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace qs {

namespace {

// The study's progress by work done rather than by measurements done: a row of block 0 runs
// every block and the head, one of the last block one block and the head, and the calibration
// runs the model over several times an evaluation's tokens. Counted in multiply-adds of the
// linears over the tokens each step runs (headers only: known before anything is computed), the
// fraction grows about evenly in time and the ETA extrapolated from it holds (issue 28: counting
// measurements alike, Sensitivity's ETA swung from 53 s to 66 s).
class StudyWork {
public:
    StudyWork(const ModuleNode& tree, int blocks) : m_blockMacs(size_t(blocks), 0.0) {
        std::vector<const ModuleNode*> leaves;
        tree.collect("linear", leaves);
        for (const ModuleNode* l : leaves)
            if (l->blockIndex >= 0 && l->blockIndex < blocks && l->shape.size() == 2)
                m_blockMacs[size_t(l->blockIndex)] += double(l->shape[0]) * double(l->shape[1]);
        leaves.clear();
        tree.collect("head", leaves);
        for (const ModuleNode* h : leaves)
            if (h->shape.size() == 2)
                m_headMacs += double(h->shape[0]) * double(h->shape[1]);
    }

    // One pass of every block over `tokens` (float and sequential calibration alike carry one
    // stream through the blocks).
    double calibration(int64_t tokens) const { return double(tokens) * fromBlock(0); }
    // One evaluation of `tokens` from block `b` on, the head included.
    double evaluation(int64_t tokens, int b) const {
        return double(tokens) * (fromBlock(b) + m_headMacs);
    }
    double blocksShare(int b) const {
        const double all = fromBlock(b) + m_headMacs;
        return all > 0 ? fromBlock(b) / all : 1.0;
    }

private:
    double fromBlock(int b) const {
        double sum = 0;
        for (size_t i = size_t(std::max(0, b)); i < m_blockMacs.size(); ++i)
            sum += m_blockMacs[i];
        return sum;
    }
    std::vector<double> m_blockMacs;
    double m_headMacs = 0;
};

} // namespace

SensitivityResult runSensitivity(const RunRequest& request, const PipelineProgress& progress,
                                 const std::function<void(const SensitivityRow&)>& onRow) {
    RunRequest base = request;
    base.evaluate = true;
    base.analyze = false;
    base.outDir.clear();
    PreparedRun prep = prepareRun(base, progress);

    const PipelineOptions options = planKeepingOptions(prep);
    CalibrationPipeline pipeline(*prep.model, *prep.planner, options);

    std::vector<std::vector<LayerPlan>> plans;
    const int blocks = prep.model->numBlocks();
    const ModuleNode tree = prep.handle.moduleTree();
    const StudyWork work(tree, blocks);
    const int64_t calibTokens = prep.calibration.defined() ? prep.calibration.numel() : 0;
    const int64_t evalTokens = prep.evaluation.numel();
    const double calibrationUnits = work.calibration(calibTokens);
    // The rows to come, by block, from the recipe's resolution on the headers (the calibration
    // plans the same layers): the total work before any is done.
    double total = calibrationUnits + 2 * work.evaluation(evalTokens, 0);
    {
        std::map<std::string, int> blockOf; // one pass: a MoE model has tens of thousands
        std::vector<const ModuleNode*> linears;
        tree.collect("linear", linears);
        for (const ModuleNode* l : linears)
            blockOf[l->name] = l->blockIndex;
        std::set<std::string> rows;
        for (const auto& [name, scheme] : prep.planner->quantizedLinears(tree))
            if (const auto it = blockOf.find(name);
                it != blockOf.end() && rows.insert(expertRowName(name)).second)
                total += 2 * work.evaluation(evalTokens, it->second);
    }
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
    // The rows as planned (an unfit layer skipped at calibration is no row): the work left.
    total = done + 2 * work.evaluation(evalTokens, 0);
    for (const Layer& layer : layers)
        total += 2 * work.evaluation(evalTokens, layer.block);

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
    for (const Layer& layer : layers) {
        SensitivityRow row;
        row.layer = layer.name;
        const std::string& name = layer.name;
        const std::set<std::string>& members = layer.members;
        const size_t b = size_t(layer.block);
        // Only this layer: its weight and input quantizers, and its output quantizer unless that
        // is the KV cache (which "alone" leaves off, as the KV cache belongs to no one layer).
        const PlanRowEvaluator::Measured alone = measure(
            [&members](const LayerPlan& p) {
                return members.count(p.name) ? PlanParts{true, !p.outputIsKvCache}
                                             : PlanParts{false, false};
            },
            rows.referenceInput(layer.block), layer.block, nullptr, name + " alone");
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
        if (onRow)
            onRow(row);
        result.rows.push_back(row);
    }
    return result;
}

} // namespace qs
