// The engine's integer weight codes written as ggml blocks, without re-rounding: the GGUF
// exporter's path for layers whose plan already chose codes, scales and zero points (round to
// nearest, GPTQ, AWQ, ...). With offset o (8 for int4 codes in [-8, 7], 0 otherwise):
//
//   Q4_0  symmetric 4-bit (zero point + 8 - o == 8):  q = code - zp + 8,  d = scale
//   Q4_1  any 4-bit:                                   q = code + o,       d = scale,
//                                                      m = -(zp + o) * scale
//   Q8_0  symmetric 8-bit, or any 4-bit:               q = code - zp,      d = scale
//
// each 32-block taking the scale of the group it lies in (groups along the input features that
// are a multiple of 32 long, per output channel, or per tensor). GGUF stores d and m as f16:
// that rounding (relative 2^-11 for normal halves, absolute 2^-25 below 2^-14) is the only
// difference from the engine's dequantized weight; the codes are the engine's, bit for bit.
#pragma once

#include "export/Exporter.h"
#include "io/GgmlTypes.h"
#include "quant/QuantScheme.h"

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace qs {

// The narrowest block that holds the scheme's weight codes as they are; nullopt with `why`
// filled when none does (float formats, asymmetric 8-bit, groups not a multiple of 32, ...).
std::optional<GgmlType> ggufCodeBlockType(const quant::QuantScheme& scheme, std::string* why);

// Why GGUF type `asked` (nullopt: "auto") cannot hold a linear quantized with `scheme` without
// re-rounding its codes; empty when it can. f32/f16 hold every layer (the dequantized weight;
// f16 rounds it). Rows that are not a multiple of 32 long are no reason: such a weight is
// written as F32, which holds the dequantized values exactly.
std::string ggufUnfitReason(const quant::QuantScheme& scheme, const std::vector<int64_t>& shape,
                            std::optional<GgmlType> asked);

// A linear's codes laid out per 32-block: codes int32 [out, in], scale fp32 [out, in/32],
// zero point int32 [out, in/32] (the group's values repeated over its blocks).
struct CodeBlockRows {
    at::Tensor codes, scale, zeroPoint;
    quant::DataType dtype = quant::DataType::Int4;
};
CodeBlockRows codeBlockRows(const quant::QuantizedTensor& q, const quant::QuantSpec& spec,
                            const std::vector<int64_t>& shape);

// One row (n codes, a multiple of 32) as blocks of `type` (Q4_0, Q4_1 or Q8_0). Throws
// qs::Error naming `layer` when a code does not fit the block (a zero point the scheme does not
// promise) or a scale overflows f16.
std::string codeBlockRow(const int32_t* codes, const float* scale, const int32_t* zeroPoint,
                         int64_t n, quant::DataType dtype, GgmlType type, const std::string& layer);

} // namespace qs
