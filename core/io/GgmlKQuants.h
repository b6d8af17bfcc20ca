// ggml's K-quant block formats Q4_K and Q6_K (super-blocks of 256 values), written to give the
// same bytes as ggml's reference quantizers quantize_row_q4_K_ref / quantize_row_q6_K_ref (what
// llama-quantize writes without an importance matrix) and the same floats as its
// dequantize_row_q4_K / dequantize_row_q6_K. Every float operation follows ggml's order (the
// scale searches are sensitive to the last bit), so this file is compiled without FP
// contraction (core/CMakeLists.txt): a fused multiply-add would change the searched scales.
//
//  Q4_K (144 bytes / 256): f16 d, f16 dmin, 12 bytes of eight 6-bit sub-block scales and mins,
//       128 bytes of 4-bit codes; x = d*sc[j]*q - dmin*m[j] per sub-block j of 32 values.
//       Sub-block (scale, min) by make_qkx2_quants (weighted least squares over 21 candidate
//       scales, weights |x| + rms), then scales and mins quantized to 6 bits against their
//       maxima, and the codes re-rounded with the stored (f16, 6-bit) values.
//  Q6_K (210 bytes / 256): 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 sub-block
//       scales, f16 d; x = d*sc[j]*(q - 32) per sub-block j of 16 values. Sub-block scale by
//       make_qx_quants (rmse_type 1: weights x^2, 18 candidate scales), quantized to int8
//       against the largest, codes re-rounded with the stored scales.
#pragma once

#include <cstdint>

namespace qs {

constexpr int64_t kGgmlSuperBlock = 256; // QK_K
constexpr uint64_t kQ4KBlockBytes = 144;
constexpr uint64_t kQ6KBlockBytes = 210;

// n must be a multiple of 256; `out` receives n/256 blocks.
void ggmlQuantizeQ4KRow(const float* x, int64_t n, uint8_t* out);
void ggmlQuantizeQ6KRow(const float* x, int64_t n, uint8_t* out);
// n/256 blocks back to n floats.
void ggmlDequantizeQ4KRow(const uint8_t* blocks, int64_t n, float* y);
void ggmlDequantizeQ6KRow(const uint8_t* blocks, int64_t n, float* y);

} // namespace qs
