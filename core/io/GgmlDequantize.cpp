#include "io/GgmlDequantize.h"

#include "util/Error.h"

#include <cstring>
#include <string>

namespace qs {

namespace {

constexpr int64_t kBlock = 32;

uint16_t loadU16(const uint8_t* p) {
    return uint16_t(p[0] | (p[1] << 8)); // GGUF is little endian
}

} // namespace

float halfToFloat(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    uint32_t bits = 0;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // inf / NaN (payload kept)
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign; // ±0
    } else {
        // Subnormal half: normalise into a float (every half subnormal is a normal float).
        int shift = 0;
        while (!(mantissa & 0x400)) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | (uint32_t(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float bfloat16ToFloat(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

bool ggmlCanDequantize(uint32_t type) {
    return ggmlTypeTraits(type).toFloat != nullptr;
}

void ggmlDequantizeRow(const uint8_t* src, float* dst, int64_t n, GgmlType type) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    if (!traits.toFloat)
        throw Error("ggml", "type", "type " + std::to_string(uint32_t(type)) + " is not decoded");
    traits.toFloat(src, n, dst);
}

void ggmlDequantizeF32Row(const uint8_t* src, int64_t n, float* dst) {
    std::memcpy(dst, src, size_t(n) * 4);
}

void ggmlDequantizeF16Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t i = 0; i < n; ++i)
        dst[i] = halfToFloat(loadU16(src + 2 * i));
}

void ggmlDequantizeBF16Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t i = 0; i < n; ++i)
        dst[i] = bfloat16ToFloat(loadU16(src + 2 * i));
}

void ggmlDequantizeQ8_0Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t b = 0; b < n / kBlock; ++b, src += 34, dst += kBlock) {
        const float d = halfToFloat(loadU16(src));
        for (int j = 0; j < kBlock; ++j)
            dst[j] = float(int8_t(src[2 + j])) * d;
    }
}

void ggmlDequantizeQ4_0Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t b = 0; b < n / kBlock; ++b, src += 18, dst += kBlock) {
        const float d = halfToFloat(loadU16(src));
        for (int j = 0; j < kBlock / 2; ++j) {
            dst[j] = float(int(src[2 + j] & 0x0f) - 8) * d;
            dst[j + kBlock / 2] = float(int(src[2 + j] >> 4) - 8) * d;
        }
    }
}

void ggmlDequantizeQ4_1Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t b = 0; b < n / kBlock; ++b, src += 20, dst += kBlock) {
        const float d = halfToFloat(loadU16(src));
        const float m = halfToFloat(loadU16(src + 2));
        for (int j = 0; j < kBlock / 2; ++j) {
            dst[j] = float(src[4 + j] & 0x0f) * d + m;
            dst[j + kBlock / 2] = float(src[4 + j] >> 4) * d + m;
        }
    }
}

// ggml's dequantize_row_q5_0: the fifth bit of element j comes from bit j of qh (elements 0-15)
// or bit j + 16 (elements 16-31).
void ggmlDequantizeQ5_0Row(const uint8_t* src, int64_t n, float* dst) {
    for (int64_t b = 0; b < n / kBlock; ++b, src += 22, dst += kBlock) {
        const float d = halfToFloat(loadU16(src));
        const uint32_t qh = uint32_t(src[2]) | uint32_t(src[3]) << 8 | uint32_t(src[4]) << 16 |
                            uint32_t(src[5]) << 24;
        for (int j = 0; j < kBlock / 2; ++j) {
            const int high0 = int((qh >> j) << 4 & 0x10);
            const int high1 = int(qh >> (j + 12) & 0x10);
            dst[j] = float((int(src[6 + j] & 0x0f) | high0) - 16) * d;
            dst[j + kBlock / 2] = float((int(src[6 + j] >> 4) | high1) - 16) * d;
        }
    }
}

} // namespace qs
