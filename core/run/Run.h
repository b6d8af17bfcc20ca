#pragma once

#include "calib/CalibrationPipeline.h"
#include "run/RunRequest.h"

namespace qs {

// A whole run as the CLI's commands and the GUI's jobs ask for it, one entry point for both:
// the full-precision evaluation when asked, then one pass of the pipeline (analysis, quantized
// evaluation, export), then the sensitivity study when asked. Progress is reported over the whole
// run (0..1); throws qs::Error for bad input (before any block is read) and qs::Cancelled when
// `progress` returns false.
RunOutcome runJob(const RunRequest& request, const PipelineProgress& progress = {});

} // namespace qs
