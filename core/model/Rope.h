#pragma once

#include "model/ModelConfig.h"

#include <ATen/ATen.h>

namespace qs {

// Rotary inverse frequencies (float32, [rotaryDim / 2]) of `rope` for a forward over `seqLen`
// positions, as transformers' ROPE_INIT_FUNCTIONS compute them, and the factor transformers
// multiplies cos and sin by (`attention_scaling`: 1 except yarn and longrope). "dynamic" and
// "longrope" depend on the length: a fresh transformers model computes them from the forward's
// length, which is what a single forward from position 0 gives here.
struct RotaryFrequencies {
    at::Tensor inverse;
    double attentionScaling = 1.0;
};
RotaryFrequencies rotaryFrequencies(const RopeParameters& rope, int64_t headDim,
                                    int64_t maxPositions, int64_t seqLen,
                                    const std::string& source);

} // namespace qs
