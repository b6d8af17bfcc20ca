// Tensor quantization following AMD Quark's definitions (quark/torch/quantization/observer,
// quark/torch/kernel/hw_emulation), so results compare one to one:
//
//  integers   s = amax / ((qmax - qmin) / 2) (symmetric) or (max - min) / (qmax - qmin) with
//             min <= 0 <= max folded in; s = max(s, eps32); zp = clamp(qmin - round(min / s));
//             q = clamp(round(x * (1/s)) + zp, qmin, qmax); x^ = (q - zp) * s. Quark multiplies
//             by the float reciprocal like torch.fake_quantize_*; so do we.
//  FP8        s = amax / fmax (0 -> eps); x^ = fp8(clamp(x / s, +-fmax)) * s, in the input dtype
//             for per-tensor/per-channel (as Quark), in fp32 for per-group.
//  FP4/FP6    per group: s = amax / fmax (float scale) or E8M0; element rounding as Quark's
//             fake_quantize_element (NaN/Inf pass through, zero is +0).
//  MX         blocks of 32 along the axis (zero padded), s = even_round(amax) (E8M0), elements
//             as above; MX INT8 elements are round(x / (s/64)) clamped to +-127.
//  NVFP4      groups of 16: s1 = amax / 6, s2 = global_amax / (6 * 448), the group scale is
//             stored as e4m3(s1 / s2) * s2; elements FP4 E2M1.
//  MX6/BFP16  Quark's "non-scaled" block formats (fake quantization only).
//
// Scales with scale type "float" are computed in the input's dtype (bf16 models get bf16-rounded
// scales, exactly as Quark), "float32" in fp32. Rounding is always half to even.
//
// Non-finite values: a NaN inside a quantization group makes that group's scale NaN, so every
// output of the group is NaN (Quark does the same; it asserts there are none). An Inf makes an
// integer/FP8 group scale Inf and the group's outputs NaN (0 * Inf). MX/NVFP4 FP4/FP6 elements
// pass NaN/Inf through unchanged while the block's finite values go to zero. BFP16 maps NaN/Inf
// to 0; MX6 saturates Inf. Integer codes of NaN inputs are the zero point.
#pragma once

#include "quant/QuantSpec.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace qs::quant {

// Observed statistics in the shape of the spec's scale tensor. Integers and per-tensor/channel/
// token FP8: min and max (input dtype). Per-group minifloat, MX and NVFP4: `max` holds the
// per-block absolute maximum and `min` is undefined. NVFP4 also carries `globalAmax` (0-dim).
struct Range {
    at::Tensor min;
    at::Tensor max;
    at::Tensor globalAmax;
    at::ScalarType inputDtype = at::kFloat;
};

struct QuantParams {
    at::Tensor scale;       // per-granularity scale; dtype: input dtype ("float") or fp32
    at::Tensor zeroPoint;   // int32, same shape (zeros for symmetric and non-integer types)
    at::Tensor globalScale; // NVFP4 second-level fp32 scale (0-dim), undefined otherwise
    at::Tensor scaleCodes;  // uint8: E8M0 codes (MX, e8m0 scales) or FP8 E4M3 codes (NVFP4)
};

// Integer rows: int32 codes in [qmin, qmax]. Float rows: uint8 bit codes of the element format
// (E4M3/E5M2/E3M2/E2M3/E2M1, sign in the top bit of the code). MX INT8: int32 codes in
// [-127, 127]. Pass-through: the cast tensor. Same shape as the input.
struct QuantizedTensor {
    DataType dtype = DataType::Int8;
    at::Tensor codes;
    QuantParams params;
};

// Shape of the scale tensor for x: per_tensor {}, per_channel {C}, per_token x.shape[:-1],
// per_group/blocks: shape of x with ch_axis swapped to the end, last dim -> number of groups.
std::vector<int64_t> paramShape(const at::Tensor& x, const QuantSpec& spec);

// Min/max (or block amax) of x at the spec's granularity.
Range observeRange(const at::Tensor& x, const QuantSpec& spec);
// Scales and zero points from observed statistics (Quark's observer _calculate_qparams).
QuantParams computeParams(const QuantSpec& spec, const Range& range);

// Quantize then dequantize, result in x's dtype. Accepts float32, bfloat16 and float16 inputs.
at::Tensor fakeQuantize(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params);
// Dynamic form: statistics from x itself (per-token activations, dynamic specs, weights
// quantized once). Uses the fused fast path for float32 integer per-group/per-channel weights.
at::Tensor fakeQuantize(const at::Tensor& x, const QuantSpec& spec);

QuantizedTensor quantize(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params);
QuantizedTensor quantize(const at::Tensor& x, const QuantSpec& spec);
// Back to real values in `dtype`. Equals fakeQuantize() of the same input and parameters for
// fp32 inputs; for bf16/fp16 inputs Quark's FP8 per-tensor/channel fake quantization divides and
// multiplies in the input dtype while its dequantization runs in fp32, and so do we.
at::Tensor dequantize(const QuantizedTensor& q, const QuantSpec& spec,
                      at::ScalarType dtype = at::kFloat);

// Quark ProgressiveSpec (the int4_fp8 weight): quantize with `first` (statistics from x), take
// the first stage's grid values (x / s1 rounded, not rescaled), fake-quantize those with
// `second` (statistics from them), then undo the first scale: result = second(first(x)) * s1.
at::Tensor fakeQuantizeProgressive(const at::Tensor& x, const QuantSpec& first,
                                   const QuantSpec& second);

} // namespace qs::quant
