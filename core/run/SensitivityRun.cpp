#include "run/SensitivityRun.h"

#include "run/PlanRowEvaluator.h"
#include "util/Error.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace qs {

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
    double measurements = 2;
    int done = 0;
    auto part = [&](const std::string& what) {
        return [&, what](double f, const std::string& m) {
            return !progress || progress((done + f) / measurements, what + ": " + m);
        };
    };
    PipelineResult calibrated = pipeline.run(prep.calibration, {}, part("calibration"));
    plans = std::move(calibrated.plans);
    ++done;

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
    measurements = double(2 * layers.size() + 3);

    PlanRowEvaluator rows(*prep.model, prep.evaluation, options.maxBatchTokens);
    auto measure = [&](const PlanFilter& filter, const at::Tensor& start, int fromBlock,
                       std::vector<at::Tensor>* blockInputs, const std::string& what) {
        const PlanRowEvaluator::Measured m =
            rows.measure(pipeline, plans, filter, start, fromBlock, blockInputs, part(what));
        ++done;
        return m;
    };
    const PlanFilter everything = [](const LayerPlan&) { return PlanParts{}; };

    SensitivityResult result;
    std::vector<at::Tensor> quantInputs;
    result.fpPerplexity = rows.measureReference(pipeline, plans, part("full precision")).perplexity;
    ++done;
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
