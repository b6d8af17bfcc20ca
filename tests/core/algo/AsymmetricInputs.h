// Shared by the GPTAQ and Qronos suites: a layer's inputs in the full-precision model and the
// same rows as a model quantized upstream gives them, and the error both solvers minimise.
#pragma once

#include "quant/QuantSpec.h"
#include "quant/SchemeRegistry.h"

#include <ATen/ATen.h>

namespace qs::test {

// Full-precision inputs with correlated features (a random mixing of a quarter as many sources
// plus noise), and the same rows moved by up to half a step of a coarse grid (15 steps over the
// range: what an upstream int8-like error looks like to this layer), so X and X~ differ row for
// row.
struct AsymmetricInputs {
    at::Tensor x, xq;
};

inline AsymmetricInputs asymmetricInputs(int64_t rows, int64_t features, uint64_t seed) {
    at::manual_seed(seed);
    const at::Tensor x =
        at::matmul(at::randn({rows, features / 4}), at::randn({features / 4, features})) +
        0.1 * at::randn({rows, features});
    const double step = x.abs().max().item<double>() / 15.0;
    return {x, at::round(x / step) * step};
}

// ||X W^T - X~ Q^T||^2: how far the quantized layer on the quantized model's inputs lands from
// the full-precision layer on the full-precision inputs.
inline double asymmetricError(const AsymmetricInputs& in, const at::Tensor& w,
                              const at::Tensor& q) {
    return (at::matmul(in.x, w.t()) - at::matmul(in.xq, q.t())).pow(2).sum().item<double>();
}

// A cross term summed in float64 over `rows` rows, scaled like gptqHessian (2/rows).
inline at::Tensor scaledLikeTheHessian(const at::Tensor& sum, int64_t rows) {
    return (sum * (2.0 / double(rows))).to(at::kFloat);
}

inline quant::QuantSpec uint4Groups(int group) {
    quant::QuantSpec s = quant::resolveScheme("uint4_wo_32").weight;
    s.groupSize = group;
    return s;
}

} // namespace qs::test
