// Qronos (Zhang et al., 2025, arXiv:2505.11695) as AMD Quark 0.13 runs it
// (quark/torch/algorithm/qronos): it fits the quantized layer on the inputs X~ of the model
// quantized upstream to the full-precision layer on the full-precision inputs X, i.e. minimises
// ||X w - X~ q||. With H = X~ X~^T and G = X X~^T (both over the same rows):
//   1. the first column q1 = Q((G_{1,:} w - H_{1,>1} w_{>1}) / H_11), the past corrected;
//   2. the other columns refitted to what q1 left: w_{>1} = (H_{>1,>1})^-1 (G_{>1,:} w - H_{>1,1}
//   q1)
//      (the inverse updated from H^-1 by Sherman-Morrison, H and G damped by alpha times H's
//      largest eigenvalue, from 30 power iterations);
//   3. GPTQ's loop over the remaining columns with the Cholesky factor of that inverse (taken of
//      beta times it and scaled back, for stability), shaping the future.
#pragma once

#include "algo/Gptq.h"

namespace qs::algo {

struct QronosOptions {
    int64_t blockSize = 128;
    bool descAct = true;
    bool staticGroups = true;
    double alpha = 1e-3; // damping, relative to H's largest eigenvalue (Quark's default)
    double beta = 1e4;   // scale of the inverse while it is factored (Quark's default)
};

// One batch's rows' cross term x^T xq in float64 [in, in] (x: full precision, xq: the same rows
// quantized upstream). Throws qs::Error naming `layer` when the shapes differ.
at::Tensor qronosCrossPart(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                           const std::string& layer);

// H's largest eigenvalue as Quark estimates it: 30 power iterations from a vector of ones on
// H / max(H), in float32 on the CPU (Quark does this on the CPU for reproducible digits).
double qronosLargestEigenvalue(const at::Tensor& hessian);

// Quantizes `weight` [out, in] with `spec` (an integer type per group along the input axis or
// per output channel), `hessian` the quantized inputs' (gptqHessian) and `cross` the sum of
// qronosCrossPart scaled alike, float [in, in]. Throws qs::Error naming `layer` when the damped
// Hessian is not positive definite.
GptqResult qronosQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                          const at::Tensor& cross, const quant::QuantSpec& spec,
                          const QronosOptions& options, const std::string& layer,
                          const std::function<void(double)>& progress = nullptr);

} // namespace qs::algo
