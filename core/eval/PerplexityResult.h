#pragma once

#include "recipe/EvaluationSpec.h"

#include <cstdint>
#include <string>

namespace qs {

// Result of the perplexity protocol of docs/evaluation.md. Torch-free value type.
struct PerplexityResult {
    int64_t tokens = 0;  // tokens of the whole text (BOS included)
    int64_t windows = 0; // windows evaluated
    int64_t seqLen = 0;
    int64_t predicted = 0; // tokens whose NLL was summed: windows × (seqLen - 1)
    double meanNll = 0.0;
    double perplexity = 0.0;
    double seconds = 0.0;         // forward time
    double tokensPerSecond = 0.0; // windows × seqLen / seconds
    std::string device;
    std::string dtype;
};

// A full-precision evaluation: where (EvaluationSpec) and on what device and dtype.
struct EvalRequest {
    EvaluationSpec evaluation;
    std::string device = "cpu";    // "cpu" or "cuda"
    std::string dtype = "float32"; // "float32", "bfloat16", "float16"
};

} // namespace qs
