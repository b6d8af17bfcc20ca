#pragma once

#include "analysis/Sensitivity.h"
#include "calib/QuantizationRun.h"

#include <functional>
#include <string>
#include <vector>

namespace qs {

// `request.evaluate` is implied; `onRow` (optional) receives each row as it is measured.
SensitivityResult runSensitivity(const QuantizationRequest& request,
                                 const PipelineProgress& progress = {},
                                 const std::function<void(const SensitivityRow&)>& onRow = {});

// A "re:" pattern matching exactly `name` (regex metacharacters escaped).
std::string exactLayerPattern(const std::string& name);

} // namespace qs
