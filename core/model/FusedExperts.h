// Experts stored fused: one tensor holds a whole layer's experts (DBRX, gpt-oss, Llama 4).
// Quantscope quantizes, analyses and hooks each expert's gate, up and down as an ordinary
// linear of its own, named as AMD Quark's per-expert replacement modules name them
// (`ffn.experts.mlp.3.w1` for DBRX, `mlp.experts.3.gate_proj` for gpt-oss,
// `feed_forward.experts.3.gate_proj` for Llama 4), so the
// slices below are taken as the model loads and put back together as the fake-quantized
// checkpoint is written. One table per layout: the names of the stored tensors, their shapes,
// how an expert is cut out of them and how the experts go back in.
#pragma once

#include "model/ModelConfig.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qs {

// The stored tensors of one layer's experts, relative to the experts module (`w1`, `v1`, `w2`;
// `gate_up_proj`, `down_proj` and, with biases, `gate_up_proj_bias`, `down_proj_bias`), in the
// order the checkpoint's writer lists them. Empty for PerExpert.
std::vector<std::string> fusedExpertTensors(ExpertStorage storage, bool bias);

// The shape `relative` (one of fusedExpertTensors) must have for `experts` experts of width
// `intermediate` in a model of width `hidden`.
std::vector<int64_t> fusedExpertShape(ExpertStorage storage, const std::string& relative,
                                      int64_t experts, int64_t intermediate, int64_t hidden);

// One expert's linears as Quantscope holds them: weights [out, in], biases [out] (undefined
// without biases).
struct ExpertSlices {
    at::Tensor gate, up, down;
    at::Tensor gateBias, upBias, downBias;
};

// Expert `e` of `experts` cut out of the stored tensors (`fused`: relative name -> tensor),
// each slice a contiguous copy.
ExpertSlices sliceExpert(ExpertStorage storage, const std::map<std::string, at::Tensor>& fused,
                         int64_t e, int64_t experts);

// The stored tensors (relative name -> tensor) holding `experts` in order: the inverse of
// sliceExpert, bit for bit.
std::map<std::string, at::Tensor> fuseExperts(ExpertStorage storage,
                                              const std::vector<ExpertSlices>& experts);

} // namespace qs
