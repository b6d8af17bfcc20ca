#include "run/SensitivityRun.h"

#include "eval/FidelityComparison.h"
#include "util/Error.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace qs {

namespace {

// The reference's logits a study keeps rather than recomputing them for every row.
constexpr int64_t kCachedReferenceLogitBytes = int64_t(512) << 20;

// The row a layer is measured in: its own, except the experts of a mixture-of-experts layer,
// whose linears of one kind share a row named by the pattern that addresses them
// ("model.layers.3.mlp.experts.*.down_proj"): 128 experts x 3 linears x 2 evaluations per layer
// would be out of reach, and one expert alone barely moves the perplexity.
std::string rowName(const std::string& layer) {
    const std::string marker = ".experts.";
    const size_t at = layer.rfind(marker);
    if (at == std::string::npos)
        return layer;
    size_t end = at + marker.size();
    while (end < layer.size() && std::isdigit(static_cast<unsigned char>(layer[end])))
        ++end;
    if (end == at + marker.size() || end >= layer.size() || layer[end] != '.')
        return layer;
    return layer.substr(0, at + marker.size()) + "*" + layer.substr(end);
}

} // namespace

SensitivityResult runSensitivity(const RunRequest& request, const PipelineProgress& progress,
                                 const std::function<void(const SensitivityRow&)>& onRow) {
    RunRequest base = request;
    base.evaluate = true;
    base.analyze = false;
    base.outDir.clear();
    PreparedRun prep = prepareRun(base, progress);

    PipelineOptions options;
    options.mode = prep.recipe.calibration.mode;
    options.maxBatchTokens = batchTokensFor(prep.model->compute().device);
    options.keepPlans = true;
    options.transforms = prep.transforms;
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
            const std::string row = rowName(p.name);
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

    const int64_t seqLen = prep.evaluation.size(1);
    const int64_t predicted = prep.evaluation.size(0) * (seqLen - 1);
    const at::Tensor embedded = pipeline.embedWindows(prep.evaluation);
    // The full-precision model's last-block outputs and its logits, every row's reference: kept
    // once computed when they fit kCachedReferenceLogitBytes (each row then runs the LM head
    // once, for its own logits, which score its perplexity and meet the reference's), else
    // recomputed from the outputs per row.
    at::Tensor fpLast, fpLogits;
    BaseLogitRows reference;
    const int64_t vocab = prep.model->config().vocabSize;
    struct Measured {
        double perplexity = 0.0;
        FidelitySummary fidelity;
    };
    auto measure = [&](const PlanFilter& filter, const at::Tensor& start, int fromBlock,
                       std::vector<at::Tensor>* blockInputs, const std::string& what) {
        const at::Tensor last = pipeline.forwardWithPlans(plans, filter, start, fromBlock, seqLen,
                                                          blockInputs, part(what));
        ++done;
        Measured m;
        if (!fpLast.defined()) {
            m.perplexity =
                std::exp(pipeline.scoreWindows(last, prep.evaluation) / double(predicted));
            fpLast = last;
            // Both sides run through this model's head (a model-level transform changed the
            // reference's blocks with it, so they agree in exact arithmetic).
            const BaseLogitRows fromHidden = baseLogitsFromHidden(
                *prep.model, [&fpLast](int64_t f, int64_t n) { return fpLast.narrow(0, f, n); },
                seqLen);
            if (predicted * vocab * 4 <= kCachedReferenceLogitBytes) {
                fpLogits = computeBaseLogits(fromHidden, prep.evaluation.size(0), seqLen,
                                             options.maxBatchTokens, vocab);
                reference = [&fpLogits](int64_t f, int64_t n) { return fpLogits.narrow(0, f, n); };
            } else {
                reference = fromHidden;
            }
            return m;
        }
        FidelitySamples samples;
        m.perplexity =
            std::exp(pipeline.scoreWindows(last, prep.evaluation,
                                           [&](int64_t first, const at::Tensor& logits) {
                                               compareScoredBatch(reference, first, logits,
                                                                  prep.evaluation, samples);
                                           }) /
                     double(predicted));
        m.fidelity = summarizeBriefly(samples);
        return m;
    };
    const PlanFilter nothing = [](const LayerPlan&) { return PlanParts{false, false}; };
    const PlanFilter everything = [](const LayerPlan&) { return PlanParts{}; };

    SensitivityResult result;
    std::vector<at::Tensor> fpInputs, quantInputs;
    result.fpPerplexity = measure(nothing, embedded, 0, &fpInputs, "full precision").perplexity;
    const Measured whole = measure(everything, embedded, 0, &quantInputs, "whole recipe");
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
        const Measured alone = measure(
            [&members](const LayerPlan& p) {
                return members.count(p.name) ? PlanParts{true, !p.outputIsKvCache}
                                             : PlanParts{false, false};
            },
            fpInputs[b], layer.block, nullptr, name + " alone");
        // The whole recipe with this layer excluded: exclusion covers weights and inputs, and a
        // KV-cache spec still applies to an excluded k/v projection (as in Quark).
        const Measured allBut = measure(
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
