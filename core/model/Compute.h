#pragma once

#include <ATen/ATen.h>

#include <string>

namespace qs {

// Where and in which precision a model computes; chosen at run time.
struct ComputeOptions {
    at::Device device = at::kCPU;
    at::ScalarType dtype = at::kFloat;
};

// Parses "cpu"/"cuda"/"cuda:N" and "float32"/"fp32"/"bfloat16"/"bf16"/"float16"/"fp16"; throws
// qs::Error naming the option when unknown or unavailable (CUDA on a CPU-only LibTorch).
ComputeOptions parseComputeOptions(const std::string& device, const std::string& dtype);
std::string dtypeLabel(at::ScalarType t);

} // namespace qs
