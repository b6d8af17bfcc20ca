#include "export/GgufCodeBlocks.h"

#include "export/GgufExporter.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>
#include <c10/util/Half.h>

#include <cmath>

namespace qs {

namespace {

using quant::DataType;
using quant::Granularity;

bool isFourBit(DataType t) {
    return t == DataType::Int4 || t == DataType::Uint4;
}

void putHalf(std::string& out, float f, const std::string& layer) {
    if (!std::isfinite(f) || std::fabs(f) > 65504.0f)
        throw Error(layer, "weight_scale",
                    "a scale or offset of " + std::to_string(f) +
                        " does not fit GGUF's f16 block scale: use --gguf-type f32");
    const uint16_t h = c10::Half(f).x;
    out.append(reinterpret_cast<const char*>(&h), 2);
}

// Where the scale of element [r, c] lives: a per-32-block layout exists when every 32-block
// lies in one group.
std::string layoutReason(const quant::QuantSpec& w) {
    if (w.granularity == Granularity::PerTensor)
        return {};
    if (w.granularity == Granularity::PerChannel)
        return w.chAxis == 0 ? ""
                             : "per-channel scales along axis " + std::to_string(w.chAxis) +
                                   " (GGUF blocks run along the input features)";
    if (w.granularity == Granularity::PerGroup) {
        if (w.chAxis != -1 && w.chAxis != 1)
            return "groups along axis " + std::to_string(w.chAxis) +
                   " (GGUF blocks run along the input features)";
        if (w.groupSize % 32 != 0)
            return "groups of " + std::to_string(w.groupSize) +
                   " (a GGUF block of 32 takes one scale: groups must be a multiple of 32)";
        return {};
    }
    return quant::granularityName(w.granularity) + " weights";
}

} // namespace

std::optional<GgmlType> ggufCodeBlockType(const quant::QuantScheme& scheme, std::string* why) {
    const quant::QuantSpec& w = scheme.weight;
    auto none = [&](const std::string& reason) -> std::optional<GgmlType> {
        if (why)
            *why = reason;
        return std::nullopt;
    };
    if (scheme.weightPreStage)
        return none("progressive weights (" + scheme.label() + ") have no integer codes");
    if (!quant::isInteger(w.dtype) ||
        (!isFourBit(w.dtype) && w.dtype != DataType::Int8 && w.dtype != DataType::Uint8))
        return none(quant::dataTypeName(w.dtype) + " weights have no GGUF integer block");
    if (const std::string r = layoutReason(w); !r.empty())
        return none(r);
    if (isFourBit(w.dtype))
        return w.symmetric ? GgmlType::Q4_0 : GgmlType::Q4_1;
    if (!w.symmetric)
        return none("asymmetric " + quant::dataTypeName(w.dtype) +
                    " codes have no GGUF block (Q8_0 is symmetric)");
    return GgmlType::Q8_0;
}

std::string ggufUnfitReason(const quant::QuantScheme& scheme, const std::vector<int64_t>& shape,
                            std::optional<GgmlType> asked) {
    if (asked && (*asked == GgmlType::F32 || *asked == GgmlType::F16 || *asked == GgmlType::BF16))
        return {}; // the dequantized weights, rounded to the float type
    if (shape.size() != 2)
        return "not a 2-D linear weight";
    std::string why;
    const std::optional<GgmlType> plan = ggufCodeBlockType(scheme, &why);
    const std::string label = scheme.weight.summary();
    if (!plan)
        return label + ": " + why +
               "; write the dequantized weights with --gguf-type f32 (exact) "
               "or f16/bf16";
    if (!asked || *asked == *plan)
        return {};
    // A wider block holds the narrower codes exactly: Q4_1 every 4-bit code (m = -8 d for
    // symmetric ones), Q8_0 every 4-bit code minus its zero point.
    const bool fourBit = *plan == GgmlType::Q4_0 || *plan == GgmlType::Q4_1;
    if ((*asked == GgmlType::Q4_1 && fourBit) || (*asked == GgmlType::Q8_0 && fourBit))
        return {};
    return label + " codes have no exact " + ggmlTypeName(*asked) +
           " form (re-rounding them would export another model than the one measured); use "
           "--gguf-type auto (" +
           ggmlTypeName(*plan) + " here), " + ggmlTypeName(*plan) +
           ", or f32/f16/bf16 for the dequantized weights";
}

CodeBlockRows codeBlockRows(const quant::QuantizedTensor& q, const quant::QuantSpec& spec,
                            const std::vector<int64_t>& shape) {
    const int64_t out = shape.at(0), in = shape.at(1), blocks = in / 32;
    CodeBlockRows rows;
    rows.dtype = spec.dtype;
    rows.codes = toHost(q.codes).to(at::kInt).reshape({out, in}).contiguous();
    at::Tensor scale = toHost(q.params.scale).to(at::kFloat);
    at::Tensor zp = q.params.zeroPoint.defined() ? toHost(q.params.zeroPoint).to(at::kInt)
                                                 : at::zeros_like(scale, at::kInt);
    if (spec.granularity == Granularity::PerGroup) {
        // [out, in / group] -> [out, blocks]: each group spans group/32 blocks.
        const int64_t repeat = spec.groupSize / 32;
        scale = scale.reshape({out, -1}).repeat_interleave(repeat, 1);
        zp = zp.reshape({out, -1}).repeat_interleave(repeat, 1);
    } else {
        const int64_t rowsOfScale = spec.granularity == Granularity::PerChannel ? out : 1;
        scale = scale.reshape({rowsOfScale, 1}).expand({out, blocks});
        zp = zp.reshape({rowsOfScale, 1}).expand({out, blocks});
    }
    rows.scale = scale.contiguous();
    rows.zeroPoint = zp.contiguous();
    if (rows.scale.size(1) != blocks)
        throw Error("gguf", "weight_scale",
                    "scale shape does not match the weight's 32-blocks (" +
                        std::to_string(rows.scale.size(1)) + " vs " + std::to_string(blocks) + ")");
    return rows;
}

std::string codeBlockRow(const int32_t* codes, const float* scale, const int32_t* zeroPoint,
                         int64_t n, quant::DataType dtype, GgmlType type,
                         const std::string& layer) {
    const int offset = dtype == DataType::Int4 ? 8 : 0;
    std::string out;
    out.reserve(ggmlRowBytes(n, type));
    auto misfit = [&](int64_t b, int value) {
        return Error(layer, "codes",
                     "block " + std::to_string(b) + " has a code " + std::to_string(value) +
                         " outside " + ggmlTypeName(type) +
                         "'s range (zero point not the scheme's): use --gguf-type auto or f32");
    };
    for (int64_t b = 0; b < n / 32; ++b) {
        const int32_t* c = codes + b * 32;
        const float s = scale[b];
        const int32_t zp = zeroPoint[b];
        if (type == GgmlType::Q8_0) {
            putHalf(out, s, layer);
            for (int j = 0; j < 32; ++j) {
                const int v = c[j] - zp;
                if (v < -128 || v > 127)
                    throw misfit(b, v);
                out.push_back(char(int8_t(v)));
            }
            continue;
        }
        int q[32];
        for (int j = 0; j < 32; ++j) {
            q[j] = type == GgmlType::Q4_0 ? c[j] - zp + 8 : c[j] + offset;
            if (q[j] < 0 || q[j] > 15)
                throw misfit(b, q[j]);
        }
        putHalf(out, s, layer);
        if (type == GgmlType::Q4_1)
            putHalf(out, -(float(zp + offset) * s), layer);
        for (int j = 0; j < 16; ++j) // ggml's nibble order: j low, j + 16 high
            out.push_back(char(q[j] | (q[j + 16] << 4)));
    }
    return out;
}

} // namespace qs
