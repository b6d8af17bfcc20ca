#include "run/Run.h"

#include "model/Compute.h"
#include "run/QuantizationRun.h"
#include "run/SensitivityRun.h"

#include <chrono>
#include <optional>

namespace qs {

std::string RunRequest::title() const {
    std::string t;
    auto add = [&t](const char* part) { t += (t.empty() ? "" : " + ") + std::string(part); };
    if (analyze)
        add("Analyze");
    if (evaluate || evaluateFullPrecision)
        add("Evaluate");
    if (!outDir.empty())
        add("Quantize");
    if (sensitivity)
        add("Sensitivity");
    return t.empty() ? std::string("Run") : t;
}

RunOutcome runJob(const RunRequest& request, const PipelineProgress& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    // An unknown or unavailable device or dtype fails before any part of the run starts.
    const ComputeOptions compute = parseComputeOptions(request.device, request.dtype);
    // A request that asks only for the full-precision figure or only for the sensitivity study
    // needs no pass of its own over the recipe.
    const bool pipelinePass = request.analyze || request.evaluate || !request.outDir.empty() ||
                              request.keepPlans ||
                              (!request.sensitivity && !request.evaluateFullPrecision);
    // A sensitivity study is made ready before anything runs: its bad input, a recipe with
    // nothing to measure among it, fails at once rather than after the analysis, and its work is
    // known to weigh against the analysis's.
    std::optional<SensitivityStudy> study;
    if (request.sensitivity) {
        RunRequest studied = request;
        studied.analyze = false;
        studied.outDir.clear();
        study.emplace(studied, [&progress](double, const std::string& m) {
            return !progress || progress(0.0, m);
        });
    }
    // The parts' shares of the progress bar (the full-precision evaluation is a short pass over
    // the evaluation windows). The analysis and the study share theirs by work (run/StudyWork.h):
    // the study is several times longer, and half each made the ETA wrong by as much.
    const double fpShare = request.evaluateFullPrecision ? 0.3 : 0.0;
    double sensitivityShare = 0.0;
    if (study) {
        const double passWork = pipelinePass && request.analyze ? study->analysisWork() : 0.0;
        const double studyWork = study->work();
        // A pass without analysis (evaluation, export) is weighed as half the bar, as before.
        const double studyPart = !pipelinePass ? 1.0
                                 : passWork > 0 && studyWork > 0
                                     ? studyWork / (passWork + studyWork)
                                     : 0.5;
        sensitivityShare = studyPart * (1.0 - fpShare);
    }
    const double passShare = pipelinePass ? 1.0 - fpShare - sensitivityShare : 0.0;
    double from = 0.0;
    auto part = [&](double share, const std::string& label) -> PipelineProgress {
        const double start = from;
        from += share;
        if (!progress)
            return {};
        return [progress, start, share, label](double f, const std::string& m) {
            return progress(start + share * f, label.empty() ? m : label + ": " + m);
        };
    };

    // An evaluated quantizing recipe brings the full-precision figure with its fidelity report
    // (run/FullPrecisionReference.h); otherwise the full-precision figure is a pass of its own.
    const bool fpFromPass =
        pipelinePass && request.evaluate && request.fidelity && request.recipe.quantizesAnything();
    RunOutcome outcome;
    outcome.recipe = request.recipe;
    if (pipelinePass) {
        RunRequest pass = request;
        pass.sensitivity = false;
        pass.evaluateFullPrecision = false;
        outcome = static_cast<RunOutcome&&>(
            runQuantization(pass, part(passShare + (fpFromPass ? fpShare : 0.0), "")));
    }
    if (request.evaluateFullPrecision && !outcome.fullPrecision) {
        // The fp32 figure beside the quantized one, on the same windows, through the same
        // pipeline: a recipe without schemes.
        EvalRequest fp;
        fp.evaluation = request.recipe.evaluation;
        fp.device = request.device;
        fp.dtype = request.dtype;
        outcome.fullPrecision =
            evaluateModelOnText(request.modelDir, fp, part(fpShare, "fp32"), request.tokenizer);
    }
    if (study)
        outcome.sensitivity = study->run(part(sensitivityShare, ""), request.onSensitivityRow);
    outcome.device = compute.device.str();
    outcome.dtype = dtypeLabel(compute.dtype);
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return outcome;
}

} // namespace qs
