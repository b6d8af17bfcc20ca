// Fused round-to-nearest fake quantization of float32 CPU weights for integer types: one pass
// per group for min/max and one for the codes, parallel over groups. Chained ATen elementwise
// ops reach only ~0.5 GB/s here (docs/pitfalls.md); this loop gives the same bits as the
// generic path (computeParams + fakeQuantize) because it performs the same IEEE operations in
// the same order, including NaN propagation.
#pragma once

#include "quant/QuantSpec.h"
#include "quant/Quantize.h"

#include <ATen/core/Tensor.h>

namespace qs::quant {

struct FastQuantResult {
    at::Tensor fake;      // same shape and dtype as the input
    at::Tensor scale;     // fp32, shape paramShape(x, spec)
    at::Tensor zeroPoint; // int32, same shape
    at::Tensor codes;     // int32 codes when requested, else undefined
};

// True for float32 CPU tensors with an integer spec, the minmax observer, float/float32 scales
// and groups that are contiguous runs of the last axis: per_group along the last axis,
// per_token, or per_channel on axis 0 of a 2-D tensor.
bool fastPathApplies(const at::Tensor& x, const QuantSpec& spec);

// Throws qs::Error when !fastPathApplies(x, spec). `out`, when given, receives the result
// (float32, contiguous, x's shape; it may be x itself to quantize a weight in place) and is
// returned as `fake`; otherwise a new tensor is allocated (its first-touch page faults cost as
// much as the arithmetic on large weights).
FastQuantResult fakeQuantizeFast(const at::Tensor& x, const QuantSpec& spec, bool wantCodes = false,
                                 at::Tensor out = {});

// The static form: fake quantization of a float32 CPU tensor with given (frozen) integer
// parameters, for per-tensor specs and the contiguous group layouts above. Bit-identical to
// fakeQuantize(x, spec, params) (the same IEEE operations in the same order).
bool fastParamsPathApplies(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params);
// On by default. Benchmarks switch the static kernel off to time the ATen path it replaces in
// the same run (bench/bench_engine.cpp); the results are the same bits either way.
void setFusedStaticKernelEnabled(bool enabled);
at::Tensor fakeQuantizeFastWithParams(const at::Tensor& x, const QuantSpec& spec,
                                      const QuantParams& params);

} // namespace qs::quant
