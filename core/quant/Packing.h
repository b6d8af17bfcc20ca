// Bit packing of quantized codes as Quark exports them (quark/torch/utils/pack.py). All
// functions pack along the last axis; the exporter transposes first where Quark does
// (per-group int4 weights are stored [in, out/8]). Packing runs on the host and returns CPU
// tensors (they go to files).
#pragma once

#include "quant/Quantize.h"

#include <ATen/core/Tensor.h>

namespace qs::quant {

// int4/uint4 codes (any integer dtype, [..., n]) -> int32 [..., ceil(n/8)]; nibble i of each
// word (bits 4i..4i+3) holds element order[i] of its group of 8, with order [0,2,4,6,1,3,5,7]
// for PackOrder::Reorder (AWQ) and [0..7] for PackOrder::Order. A partial last word is padded
// with zero nibbles.
at::Tensor packInt4(const at::Tensor& codes, PackOrder order);
// Inverse; `n` is the unpacked length of the last axis; signed codes are sign-extended.
at::Tensor unpackInt4(const at::Tensor& packed, PackOrder order, bool isSigned, int64_t n);

// int3: 8 values in 3 bytes, value k at bits 3k..3k+2 of a little-endian 24-bit word
// (Quark Pack_3_bits). n must be a multiple of 8.
at::Tensor packInt3(const at::Tensor& codes);
at::Tensor unpackInt3(const at::Tensor& packed, bool isSigned);

// FP4 E2M1 bit codes (uint8, [..., n], n even) -> uint8 [..., n/2], low nibble = even element.
at::Tensor packFp4(const at::Tensor& codes);
at::Tensor unpackFp4(const at::Tensor& packed);

// FP6 bit codes (uint8, n % 4 == 0) -> uint8 [..., n/4*3]: four 6-bit values v0..v3 as the
// little-endian 24-bit word v0 | v1 << 6 | v2 << 12 | v3 << 18 (Quark Pack_fp6, the layout of
// AMD's mfma_scale f8f6f4 instructions).
at::Tensor packFp6(const at::Tensor& codes);
at::Tensor unpackFp6(const at::Tensor& packed);

// E8M0 scales: power-of-two fp32 scales <-> uint8 log2(s) + 127 (NaN <-> 0xFF).
at::Tensor e8m0FromScale(const at::Tensor& scale);
at::Tensor scaleFromE8m0(const at::Tensor& codes);

// Packs q.codes according to the type's PackFormat (traits); formats without packing return
// the codes as the storage dtype (int8/uint8 bytes, int32 for int2).
at::Tensor packCodes(const QuantizedTensor& q, PackOrder order = PackOrder::Reorder);
// Inverse of packCodes; `n` is the unpacked length of the last axis.
at::Tensor unpackCodes(const at::Tensor& packed, DataType dtype, int64_t n,
                       PackOrder order = PackOrder::Reorder);

} // namespace qs::quant
