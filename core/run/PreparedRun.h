#pragma once

#include "calib/BlockTransform.h"
#include "calib/CalibrationPipeline.h"
#include "calib/LayerPlanner.h"
#include "eval/PerplexityResult.h"
#include "model/ModelLoader.h"
#include "run/RunRequest.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// A request checked and made ready: the recipe validated (provenance filled in), the model
// opened and instantiated, the planner checked against the model's shapes, the algorithms'
// transforms made, the calibration and evaluation ids tokenized. Everything that can fail on
// bad input fails here, before any block is read.
struct PreparedRun {
    Recipe recipe;
    ModelHandle handle;
    std::unique_ptr<LayerPlanner> planner;
    std::vector<std::shared_ptr<BlockTransform>> transforms;
    at::Tensor calibration; // int64 [N, L]; N = 0 when nothing needs calibration
    at::Tensor evaluation;  // int64 [W, L'] or undefined
    int64_t evalTokens = 0; // tokens of the whole evaluation text
    std::unique_ptr<DecoderModel> model;
    // What the run does differently from what was asked, said once (the CLI prints them, the
    // GUI shows them): patterns that match no layer, fewer windows than asked.
    std::vector<std::string> warnings;
    std::vector<std::string> exportFormats; // canonical names, checked against the model
};
PreparedRun prepareRun(const RunRequest& request, const PipelineProgress& progress = {});

} // namespace qs
