// Private to core/quant: layout helpers shared by the kernel families and their entry points.
#pragma once

#include "quant/FloatFormats.h"
#include "quant/Quantize.h"
#include "quant/TypeTraits.h"

#include <ATen/ATen.h>

#include <vector>

namespace qs::quant::detail {

// x rearranged so each row of `rows` ([R, L]) shares one scale entry, plus what is needed to
// put a result in the same row layout back into x's shape. Follows Quark's layouts: per-channel
// swaps ch_axis with axis 0, per-group and blocks swap ch_axis with the last axis.
struct RowLayout {
    at::Tensor rows;
    std::vector<int64_t> paramShape;
    std::vector<int64_t> swappedShape;
    int64_t axis = 0;
    int64_t pivot = 0;
    bool swapped = false;
    int64_t origLast = 0;   // per-group: the axis length before padding
    int64_t paddedLast = 0; // per-group: after padding to a multiple of the group size

    at::Tensor restore(const at::Tensor& rowsOut) const;
};

// Block layouts of non-integer types zero-pad a partial last group (Quark reshape_to_blocks);
// integer per-group specs require divisibility (Quark PerGroupMinMaxObserver raises).
RowLayout makeRows(const at::Tensor& x, const QuantSpec& spec);

void checkInput(const at::Tensor& x, const char* what);
// t / divisor, correctly rounded on every device. ATen's CUDA kernels compute a division by a CPU
// scalar as t * (1 / divisor), one rounding more than the CPU's true division (a scale such as
// amax / 127.5 then differs in the last bit between devices); a 0-dim divisor on t's own device
// takes the true division on both. Every divisor used here (127.5, 448, 6, 2688, ...) is exact
// in t's dtype, so the conversion that type promotion applies loses nothing.
inline at::Tensor divideExact(const at::Tensor& t, double divisor) {
    return t / at::scalar_tensor(divisor, t.options());
}
// Scale/zero-point tensors reshaped to [R, 1] for broadcasting against RowLayout::rows.
at::Tensor asColumn(const at::Tensor& t, int64_t rows);

// Elementwise minifloat rounding on float32 tensors (FloatFormats.h semantics).
at::Tensor roundFp8Tensor(const at::Tensor& xf32, const MiniFloatFormat& f);
at::Tensor roundQuarkElementTensor(const at::Tensor& xf32, const MiniFloatFormat& f);
at::Tensor encodeTensor(const at::Tensor& valuesF32, const MiniFloatFormat& f);  // -> uint8
at::Tensor decodeTensor(const at::Tensor& codesU8, const MiniFloatFormat& f);    // -> float32
at::Tensor evenRoundScaleTensor(const at::Tensor& amaxF32, int mbits, int emax); // -> float32
at::Tensor e8m0CodesTensor(const at::Tensor& scaleF32);                          // -> uint8
const MiniFloatFormat& formatOf(DataType elementType);

// Integer kernel family (IntKernels.cpp).
QuantParams intParams(const QuantSpec& spec, const Range& range);
at::Tensor intFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor intCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor intDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);

// Scaled minifloat family (FloatKernels.cpp): FP8 any granularity, FP4/FP6 per group.
QuantParams floatParams(const QuantSpec& spec, const Range& range);
at::Tensor floatFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor floatCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor floatDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);

// Block families (BlockKernels.cpp): MX, NVFP4, MX6, BFP16.
QuantParams blockParams(const QuantSpec& spec, const Range& range);
at::Tensor blockFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor blockCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor blockDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p);
at::Tensor mx6Fake(const RowLayout& l);
at::Tensor bfp16Fake(const RowLayout& l);

} // namespace qs::quant::detail
