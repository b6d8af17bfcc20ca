// Shared by the GPTAQ and Qronos suites: a layer's inputs in the full-precision model and the
// same rows as a model quantized upstream gives them, and the error both solvers minimise.
#pragma once

#include "quant/Observer.h"
#include "quant/QuantSpec.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"

#include <ATen/ATen.h>

#include <vector>

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

// What Quark's BaseHessianAlgorithm does before its loop (static groups, act order): inputs
// whose Hessian diagonal is zero fixed (diagonal 1, their weight columns and `crossDeadZeroed`'s
// columns zeroed), one grid per group from the weights so prepared, then weights, Hessian and
// cross term permuted to decreasing Hessian diagonal.
struct QuarkPrepared {
    at::Tensor W, H, cross, perm;
    quant::QuantSpec grid; // one group's grid: per output channel
    std::vector<quant::QuantParams> grids;
    int64_t groupSize = 0;
    const quant::QuantParams& gridOf(int64_t column) const {
        return grids[size_t(perm[column].item<int64_t>() / groupSize)];
    }
};

inline QuarkPrepared quarkPrepare(const at::Tensor& weight, const at::Tensor& hessian,
                                  const at::Tensor& cross, const quant::QuantSpec& spec,
                                  bool crossDeadZeroed) {
    QuarkPrepared r;
    at::Tensor W = weight.clone(), H = hessian.clone(), C = cross.clone();
    const at::Tensor dead = H.diagonal() == 0;
    H.diagonal().masked_fill_(dead, 1.0);
    W.masked_fill_(dead.unsqueeze(0), 0.0);
    if (crossDeadZeroed)
        C.masked_fill_(dead.unsqueeze(0), 0.0);
    r.groupSize = spec.groupSize;
    r.grid = spec;
    r.grid.granularity = quant::Granularity::PerChannel;
    r.grid.chAxis = 0;
    r.grid.groupSize = 0;
    for (int64_t g = 0; g < W.size(1); g += r.groupSize)
        r.grids.push_back(
            quant::computeParams(r.grid, quant::observeRange(W.narrow(1, g, r.groupSize), r.grid)));
    r.perm = at::argsort(H.diagonal(), 0, true);
    r.W = W.index_select(1, r.perm);
    r.H = H.index_select(0, r.perm).index_select(1, r.perm);
    r.cross = C.index_select(0, r.perm).index_select(1, r.perm);
    return r;
}

inline quant::QuantSpec uint4Groups(int group) {
    quant::QuantSpec s = quant::resolveScheme("uint4_wo_32").weight;
    s.groupSize = group;
    return s;
}

} // namespace qs::test
