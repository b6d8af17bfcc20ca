#pragma once

#include "calib/CalibrationPipeline.h"
#include "calib/LayerPlan.h"
#include "eval/PerplexityResult.h"
#include "run/PreparedRun.h"
#include "run/RunRequest.h"

#include <string>
#include <vector>

namespace qs {

// One pass of the calibration pipeline over a request (analysis, evaluation, export, in any
// combination its flags ask; `evaluateFullPrecision` and `sensitivity` are runJob's, run/Run.h).
// A recipe without any scheme evaluates the full-precision model through the same pipeline, so
// fp32 and quantized perplexities come from one protocol.
struct QuantizationOutcome : RunOutcome {
    std::vector<std::vector<LayerPlan>> plans; // keepPlans only
    at::Tensor evalHidden; // evaluate: the last block's outputs of the evaluation windows
};

// The protocol's figures from an NLL sum over `prepared.evaluation`.
PerplexityResult perplexityResult(const PreparedRun& prepared, double nllSum, int64_t predicted,
                                  double seconds);

// Throws qs::Error for bad input (naming file/field), qs::Cancelled when progress says stop.
// Everything that can be checked before the work (recipe, model, data files, shapes,
// algorithms, export targets) is checked before the first block is read.
QuantizationOutcome runQuantization(const RunRequest& request,
                                    const PipelineProgress& progress = {});

// The full-precision perplexity of a model on a text: runQuantization with a recipe that
// quantizes nothing.
// `warnings`, when given, receives the run's warnings (PreparedRun::warnings).
PerplexityResult evaluateModelOnText(const std::string& modelDir, const EvalRequest& request,
                                     const PipelineProgress& progress = {},
                                     TokenizerBackend backend = TokenizerBackend::Auto,
                                     std::vector<std::string>* warnings = nullptr);

} // namespace qs
