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

// RoPE on the first cos.size(-1) dimensions of each head of x (the rest pass through). Pairs
// (i, i + d/2), rotate_half (the NeoX / Hugging Face Llama layout), whose tables repeat the
// frequency list (f0 f1 .. f0 f1 ..); or `interleaved` pairs (2i, 2i + 1) (GPT-J, Cohere,
// DeepSeek-V3), whose tables repeat each frequency in place (f0 f0 f1 f1 ..).
at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       bool interleaved);

} // namespace qs
