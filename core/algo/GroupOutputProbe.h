// Measures what a scaling group's candidate scales do to the output of the module the group
// feeds (Quark's module2inspect: self_attn's output is o_proj's, mlp's is down_proj's): the block
// runs over its calibration inputs up to that linear and stops there. For candidate scales s the
// group's linears see x / s and multiply by their weights W * s, quantized with their plan's
// weight spec (AWQ's Q(W s) (x / s)); with `quantizeInputs` the inputs x / s also go through
// the plan's input quantizer (AutoSmoothQuant), its range observed on the captured inputs
// divided by s over all calibration batches, as a static quantizer would see them.
#pragma once

#include "algo/ScalingGroups.h"
#include "calib/BlockTransform.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace qs::algo {

enum class ScaleLoss { Mse, Mae };

class GroupOutputProbe {
public:
    // Runs the full-precision reference once (its outputs are kept, one tensor per batch).
    GroupOutputProbe(BlockTransformInput& input, const ResolvedScalingGroup& group);

    // Mean squared (or absolute) difference between the reference and the output with scales
    // `s` (float32 [channels], already constrained), accumulated in double.
    double loss(const at::Tensor& s, bool quantizeInputs, ScaleLoss kind = ScaleLoss::Mse);

    // The inspected module's output over all batches for scales `s` (tests).
    std::vector<at::Tensor> outputs(const at::Tensor& s, bool quantizeInputs);

    // Fake-quantized weight as the plan's scheme would quantize it round-to-nearest (the
    // weight pass's numbers); `w` unchanged when the plan quantizes no weight.
    static at::Tensor quantizeWeight(const LayerPlan* plan, const at::Tensor& w);

private:
    std::vector<at::Tensor> run(const at::Tensor& s, bool quantizeInputs);

    BlockTransformInput& m_input;
    const ResolvedScalingGroup& m_group;
    std::vector<at::Tensor> m_reference;
};

} // namespace qs::algo
