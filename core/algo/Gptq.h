// GPTQ (Frantar et al., 2022) as AutoGPTQ's `fasterquant` and Quark's GPTQ processor run it:
// columns quantized one at a time in the order of the inverse Hessian's Cholesky factor, each
// column's rounding error spread over the columns not yet quantized, lazily in blocks of
// `blockSize` columns. The quantization grid of a group is taken when the loop reaches the
// group's first column, from the weights as the earlier blocks left them (static_groups: from the
// original weights, before any update), exactly as those implementations do.
#pragma once

#include "quant/Quantize.h"

#include <ATen/core/Tensor.h>

#include <functional>

namespace qs::algo {

struct GptqOptions {
    double dampPercent = 0.01; // damping: this fraction of the Hessian's mean diagonal
    int64_t blockSize = 128;   // columns per lazy update
    bool descAct = false;      // columns in decreasing Hessian diagonal ("act order")
    bool staticGroups = false; // group grids from the original weights
};

struct GptqResult {
    quant::QuantizedTensor codes; // int32 codes [out, in] with the spec's scales and zero points
    at::Tensor dequantized;       // float32 [out, in], == dequantize(codes) bit for bit
    double dampingUsed = 0;       // the damping that made H positive definite (see below)
};

// Throws qs::Error(layer, field, why) unless GPTQ can quantize a weight of this spec: an integer
// type per group along the input axis or per output channel (as Quark's GPTQ). GPTAQ and Qronos
// share the check; `algorithm` is the name the refusal gives (GPTQ, GPTAQ, Qronos).
void checkGptqSpec(const quant::QuantSpec& spec, const std::string& layer,
                   const std::string& algorithm = "GPTQ");

// The Hessian of a linear's inputs: 2/n * sum over the rows x of x x^T, accumulated in float64
// and returned as float32 [in, in] (what AutoGPTQ averages batch by batch). Throws qs::Error
// when there are no rows or their width differs from `inFeatures`.
at::Tensor gptqHessian(const std::vector<at::Tensor>& inputs, int64_t inFeatures,
                       const std::string& layer);
// Its two halves, for a run that adds the batches' partial sums across ranks: one batch's
// x^T x in float64 (checked as above), and 2/rows times the sum of every batch's, as float32.
at::Tensor gptqHessianPart(const at::Tensor& input, int64_t inFeatures, const std::string& layer);
at::Tensor gptqHessianFromSum(const at::Tensor& sum, int64_t rows, const std::string& layer);

// Throws qs::Error naming `layer` unless `x` (a linear's inputs in the full-precision model) and
// `xq` (the same rows in the model quantized upstream) are both [rows, inFeatures] with the same
// rows: what GPTAQ's and Qronos' cross terms pair row for row.
void checkPairedInputs(const at::Tensor& x, const at::Tensor& xq, int64_t inFeatures,
                       const std::string& layer);

// Quantizes `weight` ([out, in], any float dtype, any device) with `spec` (an integer type per
// group along the input axis, or per output channel). If H + damping is not positive definite
// the damping is multiplied by 10 up to 1e6 times the mean diagonal (reported in the result)
// before a qs::Error naming the layer. `progress`, called before each block of columns with
// the fraction of columns done, may throw (qs::Cancelled when the run is cancelled): a wide
// layer stops within one block of columns.
GptqResult gptqQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                        const quant::QuantSpec& spec, const GptqOptions& options,
                        const std::string& layer,
                        const std::function<void(double)>& progress = nullptr);

} // namespace qs::algo
