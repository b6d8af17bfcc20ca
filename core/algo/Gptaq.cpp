#include "algo/Gptaq.h"

#include "algo/GptqColumns.h"
#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::algo {

at::Tensor gptaqCrossPart(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                          const std::string& layer) {
    checkPairedInputs(x, xq, inFeatures, layer);
    const at::Tensor q = xq.to(at::kDouble);
    return at::matmul((x.to(at::kDouble) - q).t(), q);
}

GptqResult gptaqQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                         const at::Tensor& cross, const quant::QuantSpec& spec,
                         const GptaqOptions& options, const std::string& layer,
                         const std::function<void(double)>& progress) {
    GptqColumns columns(weight, hessian, spec, options.descAct, options.staticGroups, layer,
                        "GPTAQ");
    if (cross.sizes() != hessian.sizes())
        throw Error(layer, "inputs", "GPTAQ needs an [in, in] cross term beside the Hessian");
    // As Quark: the columns of always-zero inputs carry no correction either.
    at::Tensor dXX = cross.to(columns.weight().device(), at::kFloat).clone();
    dXX.masked_fill_(columns.dead().unsqueeze(0), 0.0);
    dXX = columns.permuted(dXX);
    double damp = 0;
    const at::Tensor factor = columns.inverseFactor(options.dampPercent, damp);
    // P = alpha (dXX L).triu(1) L^T with L = factor^T: strictly upper triangular, in Quark's
    // order of operations (the scale before the second product).
    const at::Tensor L = factor.t();
    const at::Tensor P =
        at::matmul(at::matmul(dXX, L).triu_(1) * options.alpha, L.t()).contiguous();
    columns.run(factor, P, 0, options.blockSize, progress);
    return columns.result(damp);
}

} // namespace qs::algo
