#include "calib/SensitivityRun.h"

#include "util/Error.h"

#include <cmath>

namespace qs {

SensitivityResult runSensitivity(const QuantizationRequest& request,
                                 const PipelineProgress& progress,
                                 const std::function<void(const SensitivityRow&)>& onRow) {
    QuantizationRequest base = request;
    base.evaluate = true;
    base.analyze = false;
    base.outDir.clear();
    PreparedRun prep = prepareRun(base, progress);

    PipelineOptions options;
    options.mode = prep.recipe.calibration.mode;
    options.keepPlans = true;
    options.transforms = prep.transforms;
    CalibrationPipeline pipeline(*prep.model, *prep.planner, options);

    // The calibration run evaluates the whole recipe on the way (its evaluation stream).
    std::vector<std::vector<LayerPlan>> plans;
    double measurements = 2;
    int done = 0;
    auto part = [&](const std::string& what) {
        return [&, what](double f, const std::string& m) {
            return !progress || progress((done + f) / measurements, what + ": " + m);
        };
    };
    PipelineResult calibrated =
        pipeline.run(prep.calibration, prep.evaluation, part("whole recipe"));
    plans = std::move(calibrated.plans);
    ++done;

    std::vector<std::string> layers;
    for (const auto& block : plans)
        for (const LayerPlan& p : block)
            if (p.scheme)
                layers.push_back(p.name);
    if (layers.empty())
        throw Error("recipe", "global", "the recipe quantizes no layer: nothing to measure");
    measurements = double(2 * layers.size() + 2);

    auto perplexity = [&](const PlanFilter& filter, const std::string& what) {
        int64_t predicted = 0;
        const double nll =
            pipeline.evaluateWithPlans(plans, filter, prep.evaluation, predicted, part(what));
        ++done;
        return std::exp(nll / double(predicted));
    };

    SensitivityResult result;
    result.fullPerplexity = std::exp(calibrated.evalNllSum / double(calibrated.evalPredicted));
    result.fpPerplexity =
        perplexity([](const LayerPlan&) { return PlanParts{false, false}; }, "full precision");
    for (const std::string& layer : layers) {
        SensitivityRow row;
        row.layer = layer;
        // Only this layer: its weight and input quantizers, and its output quantizer unless that
        // is the KV cache (which "alone" leaves off, as the KV cache belongs to no one layer).
        row.alonePerplexity = perplexity(
            [&layer](const LayerPlan& p) {
                return p.name == layer ? PlanParts{true, !p.outputIsKvCache} : PlanParts{false, false};
            },
            layer + " alone");
        // The whole recipe with this layer excluded: exclusion covers weights and inputs, and a
        // KV-cache spec still applies to an excluded k/v projection (as in Quark).
        row.allButPerplexity = perplexity(
            [&layer](const LayerPlan& p) {
                return p.name == layer ? PlanParts{false, p.outputIsKvCache} : PlanParts{};
            },
            "all but " + layer);
        if (onRow)
            onRow(row);
        result.rows.push_back(row);
    }
    return result;
}

} // namespace qs
