#include "algo/Gptq.h"

#include "algo/GptqColumns.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::algo {

void checkGptqSpec(const quant::QuantSpec& spec, const std::string& layer,
                   const std::string& algorithm) {
    if (quant::traits(spec.dtype).encoding != quant::Encoding::Int)
        throw Error(layer, "weight.dtype",
                    algorithm +
                        " quantizes integer weights (int/uint per group or per channel), not " +
                        quant::dataTypeName(spec.dtype));
    const bool perGroup = spec.granularity == quant::Granularity::PerGroup;
    if (!perGroup && spec.granularity != quant::Granularity::PerChannel)
        throw Error(layer, "weight.qscheme",
                    algorithm +
                        " supports per_group and per_channel weights (as Quark); exclude "
                        "this layer from " +
                        algorithm + " (inside_layer_modules) or give it such a scheme");
    if (perGroup && !(spec.chAxis == -1 || spec.chAxis == 1))
        throw Error(layer, "weight.ch_axis", algorithm + " groups run along the input axis");
    if (!perGroup && spec.chAxis != 0)
        throw Error(layer, "weight.ch_axis",
                    algorithm + " per-channel grids are per output channel");
}

at::Tensor gptqHessianPart(const at::Tensor& x, int64_t inFeatures, const std::string& layer) {
    if (x.dim() != 2 || x.size(1) != inFeatures)
        throw Error(layer, "inputs",
                    "captured inputs of width " + std::to_string(x.size(-1)) + ", expected " +
                        std::to_string(inFeatures));
    const at::Tensor xd = x.to(at::kDouble);
    return at::matmul(xd.t(), xd);
}

void checkPairedInputs(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                       const std::string& layer) {
    if (x.dim() != 2 || xq.dim() != 2 || x.size(1) != inFeatures || xq.sizes() != x.sizes())
        throw Error(layer, "inputs",
                    "the full-precision inputs [" + std::to_string(x.size(0)) + ", " +
                        std::to_string(x.size(-1)) + "] do not match the quantized ones [" +
                        std::to_string(xq.size(0)) + ", " + std::to_string(xq.size(-1)) +
                        "] row for row (expected width " + std::to_string(inFeatures) + ")");
}

at::Tensor gptqHessianFromSum(const at::Tensor& sum, int64_t rows, const std::string& layer) {
    if (rows == 0)
        throw Error(layer, "inputs", "GPTQ needs calibration inputs (zero rows captured)");
    return (sum * (2.0 / double(rows))).to(at::kFloat);
}

at::Tensor gptqHessian(const std::vector<at::Tensor>& inputs, int64_t inFeatures,
                       const std::string& layer) {
    if (inputs.empty())
        throw Error(layer, "inputs", "GPTQ needs calibration inputs (none were captured)");
    at::Tensor h;
    int64_t rows = 0;
    for (const at::Tensor& x : inputs) {
        const at::Tensor part = gptqHessianPart(x, inFeatures, layer);
        h = h.defined() ? h + part : part;
        rows += x.size(0);
    }
    return gptqHessianFromSum(h, rows, layer);
}

GptqResult gptqQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                        const quant::QuantSpec& spec, const GptqOptions& options,
                        const std::string& layer, const std::function<void(double)>& progress) {
    GptqColumns columns(weight, hessian, spec, options.descAct, options.staticGroups, layer);
    double damp = 0;
    const at::Tensor factor = columns.inverseFactor(options.dampPercent, damp);
    columns.run(factor, at::Tensor(), 0, options.blockSize, progress);
    return columns.result(damp);
}

} // namespace qs::algo
