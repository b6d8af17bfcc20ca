// GPTAQ (Li et al., 2025, arXiv:2504.02692) as AMD Quark 0.13 runs it
// (quark/torch/algorithm/gptaq): GPTQ whose target is the full-precision layer's output on the
// full-precision inputs X while it sees the inputs X~ of the model quantized upstream. Besides
// GPTQ's Hessian H = 2/n X~ X~^T it takes dXX = 2/n (X - X~) X~^T and corrects every update by
// P = alpha (dXX L).triu(1) L^T (L: the lower Cholesky factor of H^-1), the error the asymmetric
// inputs leave (the paper's eq. 10).
#pragma once

#include "algo/Gptq.h"

namespace qs::algo {

struct GptaqOptions : GptqOptions {
    double alpha = 0.25; // weight of the asymmetry correction (Quark's GPTAQConfig.alpha)
};

// The cross term of one batch's rows: (x - xq)^T xq in float64 [in, in], x the layer's inputs in
// the full-precision model and xq the same rows in the model quantized upstream (row for row the
// same tokens). Throws qs::Error naming `layer` when the shapes differ.
at::Tensor gptaqCrossPart(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                          const std::string& layer);

// Quantizes `weight` [out, in] with `spec` (as gptqQuantize), `hessian` from the quantized
// inputs (gptqHessian) and `cross` the sum of gptaqCrossPart over the same rows scaled like the
// Hessian (2/rows), float [in, in].
GptqResult gptaqQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                         const at::Tensor& cross, const quant::QuantSpec& spec,
                         const GptaqOptions& options, const std::string& layer,
                         const std::function<void(double)>& progress = nullptr);

} // namespace qs::algo
