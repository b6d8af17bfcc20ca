// ggml's reference quantizers (ggml-quants.c quantize_row_*_ref) of the float and 32-block
// types, one row of n floats to blocks; the from-float of their rows in the type table
// (GgmlTypes.h; Q4_K and Q6_K are in GgmlKQuants.h):
//   Q8_0 {f16 d = amax/127; int8 q = round(x/d)}
//   Q4_0 {f16 d = max/-8 (max = the signed value of largest magnitude);
//         q = min(15, (int8)(x/d + 8.5))}
//   Q4_1 {f16 d = (max-min)/15, f16 m = min; q = min(15, (int8)((x-min)/d + 0.5))}
//   Q5_0 {f16 d = max/-16; 5-bit q = min(31, (int8)(x/d + 16.5)), high bits in a 32-bit mask}
//   F16 and BF16 round to nearest even (BF16 as ggml_compute_fp32_to_bf16: NaN made quiet,
//   subnormals kept).
// The multiplications by the reciprocal and the casts are ggml's, in its order. n must be a
// multiple of 32 for the block types; `out` receives ggmlRowBytes(n, type) bytes.
#pragma once

#include <cstdint>

namespace qs {

void ggmlQuantizeF32Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeF16Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeBF16Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeQ8_0Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeQ4_0Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeQ4_1Row(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeQ5_0Row(const float* x, int64_t n, uint8_t* out);

} // namespace qs
