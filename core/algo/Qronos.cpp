#include "algo/Qronos.h"

#include "algo/GptqColumns.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <cmath>

namespace qs::algo {

at::Tensor qronosCrossPart(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                           const std::string& layer) {
    checkPairedInputs(x, xq, inFeatures, layer);
    return at::matmul(x.to(at::kDouble).t(), xq.to(at::kDouble));
}

double qronosLargestEigenvalue(const at::Tensor& hessian) {
    const at::Tensor H = hessian.to(at::kCPU, at::kFloat);
    const at::Tensor c = H.max().abs();
    const at::Tensor Hk = H / c;
    at::Tensor b = at::ones({H.size(1)}, H.options());
    for (int i = 0; i < 30; ++i) {
        const at::Tensor next = at::mv(Hk, b);
        b = next / (at::norm(next) + 1e-12);
    }
    // The Rayleigh quotient of the (unit) vector reached.
    return (at::dot(b, at::mv(Hk, b)) * c).item<double>();
}

GptqResult qronosQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                          const at::Tensor& cross, const quant::QuantSpec& spec,
                          const QronosOptions& options, const std::string& layer,
                          const std::function<void(double)>& progress) {
    GptqColumns columns(weight, hessian, spec, options.descAct, options.staticGroups, layer,
                        "Qronos");
    if (cross.sizes() != hessian.sizes())
        throw Error(layer, "inputs", "Qronos needs an [in, in] cross term beside the Hessian");
    at::Tensor& W = columns.weight();
    const at::Tensor& H = columns.hessian();
    const at::Tensor G = columns.permuted(cross);
    const int64_t cols = W.size(1), rest = cols - 1;

    const double damp = options.alpha * qronosLargestEigenvalue(H);
    at::Tensor damped = H.clone();
    damped.diagonal().add_(damp);
    auto [chol, info] = at::linalg_cholesky_ex(damped);
    if (info.item<int64_t>() != 0)
        throw Error(layer, "alpha",
                    "the input Hessian damped by alpha " + std::to_string(options.alpha) +
                        " times its largest eigenvalue is not positive definite (raise alpha or "
                        "check the layer's inputs)");
    const at::Tensor Hinv = at::cholesky_inverse(chol);

    // 1. The first column from the full-precision target and the other columns as they are.
    const at::Tensor h00 = H[0][0];
    const at::Tensor inv00 = h00.item<float>() == 0.0f ? at::zeros_like(h00) : 1.0 / h00;
    at::Tensor h0 = H[0].clone();
    h0[0] = 0;
    const at::Tensor target = at::matmul(W, G.select(1, 0) * inv00) - at::matmul(W, h0 * inv00);
    const at::Tensor q0 = columns.quantizeColumn(0, target);
    if (rest == 0)
        return columns.result(damp);

    // 2. (H_{>1,>1} + damp)^-1 from H^-1 (Sherman-Morrison), the other columns refitted.
    const at::Tensor b = Hinv.narrow(0, 1, rest).narrow(1, 0, 1);
    const at::Tensor reduced =
        Hinv.narrow(0, 1, rest).narrow(1, 1, rest) - at::matmul(b, b.t()) / Hinv[0][0];
    at::Tensor dampedG = G.clone();
    dampedG.diagonal().add_(damp);
    const at::Tensor refit =
        at::matmul(W, at::matmul(dampedG.narrow(1, 1, rest), reduced)) -
        at::matmul(q0.unsqueeze(1), at::matmul(H.narrow(0, 0, 1).narrow(1, 1, rest), reduced));
    W.narrow(1, 1, rest).copy_(refit);

    // 3. GPTQ over the rest with the factor of that inverse (factored at beta times its scale).
    const at::Tensor factor =
        at::linalg_cholesky(reduced * options.beta, /*upper=*/true) / std::sqrt(options.beta);
    columns.run(factor, at::Tensor(), 1, options.blockSize, progress);
    return columns.result(damp);
}

} // namespace qs::algo
