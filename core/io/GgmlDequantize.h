#pragma once

#include "io/GgmlTypes.h"

#include <cstdint>

namespace qs {

// Decodes one row of `n` elements stored as ggml type `type` (ggml's block layouts, as
// ggml-quants.c dequantize_row_* computes them) to float, through the type table's to-float
// (GgmlTypes.h):
//   F32, F16, BF16  element by element (F16/BF16 widened exactly);
//   Q8_0  blocks of 32: {f16 d; int8 q[32]}              y = d * q
//   Q4_0  blocks of 32: {f16 d; uint8 qs[16]}            y[j] = d * ((qs[j] & 15) - 8),
//                                                        y[j+16] = d * ((qs[j] >> 4) - 8)
//   Q4_1  blocks of 32: {f16 d; f16 m; uint8 qs[16]}     y[j] = d * (qs[j] & 15) + m,
//                                                        y[j+16] = d * (qs[j] >> 4) + m
//   Q5_0  blocks of 32: {f16 d; uint32 qh; uint8 qs[16]} y = d * (q - 16), q's fifth bit in qh
//   Q4_K, Q6_K  super-blocks of 256 (io/GgmlKQuants.h)
// `n` must be a multiple of the block size and `src` must hold ggmlRowBytes(n, type) bytes (the
// GGUF reader checks both before any row is decoded). Torch-free. Throws qs::Error naming the
// type for a type it does not decode.
void ggmlDequantizeRow(const uint8_t* src, float* dst, int64_t n, GgmlType type);

// Whether ggmlDequantizeRow decodes type id `type`.
bool ggmlCanDequantize(uint32_t type);

// IEEE half / bfloat16 bits to float (exact).
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

// The to-float of each float and 32-block type (the table's rows), in GgmlToFloat's order.
void ggmlDequantizeF32Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeF16Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeBF16Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeQ8_0Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeQ4_0Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeQ4_1Row(const uint8_t* src, int64_t n, float* dst);
void ggmlDequantizeQ5_0Row(const uint8_t* src, int64_t n, float* dst);

} // namespace qs
