#pragma once

#include "analysis/Sensitivity.h"
#include "run/QuantizationRun.h"

#include <functional>
#include <string>
#include <vector>

namespace qs {

// Per-layer sensitivity of the perplexity (analysis/Sensitivity.h): the recipe is calibrated
// once, on the whole model, and every row reuses those plans (quantized weights and frozen
// activation quantizers) with layers switched on and off: one calibration plus one evaluation
// per measurement. With float calibration (the default) the frozen ranges equal what a
// calibration of each row's recipe would give; with sequential calibration they are the whole
// recipe's. `request.evaluate` is implied; `onRow` (optional) receives each row as it is measured.
SensitivityResult runSensitivity(const RunRequest& request, const PipelineProgress& progress = {},
                                 const std::function<void(const SensitivityRow&)>& onRow = {});

} // namespace qs
