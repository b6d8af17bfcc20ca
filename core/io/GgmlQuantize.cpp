#include "io/GgmlQuantize.h"

#include <c10/util/Half.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace qs {

namespace {

constexpr int kBlock = 32;

// Header-only c10::Half: round to nearest even, as ggml's FP32_TO_FP16.
uint8_t* putHalf(uint8_t* out, float f) {
    const uint16_t h = c10::Half(f).x;
    std::memcpy(out, &h, 2);
    return out + 2;
}

// ggml's ggml_compute_fp32_to_bf16: round to nearest even on the upper 16 bits; a NaN keeps its
// sign and top mantissa bits and is made quiet (bit 6 of the result). Infinities stay infinite,
// and subnormals are rounded like any value (not flushed).
uint16_t toBrainBits(float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return uint16_t((u >> 16) | 64u);
    return uint16_t((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

// The signed value of largest magnitude (the first of equal magnitudes), as ggml's Q4_0/Q5_0.
float signedMax(const float* v) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kBlock; ++j)
        if (amax < std::fabs(v[j])) {
            amax = std::fabs(v[j]);
            max = v[j];
        }
    return max;
}

} // namespace

void ggmlQuantizeF32Row(const float* x, int64_t n, uint8_t* out) {
    std::memcpy(out, x, size_t(n) * 4);
}

void ggmlQuantizeF16Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t i = 0; i < n; ++i)
        out = putHalf(out, x[i]);
}

void ggmlQuantizeBF16Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t b = toBrainBits(x[i]);
        std::memcpy(out + 2 * i, &b, 2);
    }
}

void ggmlQuantizeQ8_0Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float* v = x + b * kBlock;
        float amax = 0.0f;
        for (int j = 0; j < kBlock; ++j)
            amax = std::max(amax, std::fabs(v[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        out = putHalf(out, d);
        for (int j = 0; j < kBlock; ++j)
            *out++ = uint8_t(int8_t(std::roundf(v[j] * id)));
    }
}

void ggmlQuantizeQ5_0Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float* v = x + b * kBlock;
        const float d = signedMax(v) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        out = putHalf(out, d);
        uint32_t high = 0; // bit j: the fifth bit of code j
        uint8_t low[16];
        for (int j = 0; j < 16; ++j) {
            const uint8_t a = std::min<uint8_t>(31, uint8_t(int8_t(v[j] * id + 16.5f)));
            const uint8_t c = std::min<uint8_t>(31, uint8_t(int8_t(v[16 + j] * id + 16.5f)));
            low[j] = uint8_t((a & 0xF) | ((c & 0xF) << 4));
            high |= uint32_t((a & 0x10) >> 4) << j;
            high |= uint32_t((c & 0x10) >> 4) << (j + 16);
        }
        std::memcpy(out, &high, 4); // GGUF is little endian, as the hosts Quantscope runs on
        std::memcpy(out + 4, low, 16);
        out += 20;
    }
}

void ggmlQuantizeQ4_0Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float* v = x + b * kBlock;
        const float d = signedMax(v) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        out = putHalf(out, d);
        for (int j = 0; j < 16; ++j) {
            const uint8_t a = std::min<uint8_t>(15, uint8_t(int8_t(v[j] * id + 8.5f)));
            const uint8_t c = std::min<uint8_t>(15, uint8_t(int8_t(v[16 + j] * id + 8.5f)));
            *out++ = uint8_t(a | (c << 4));
        }
    }
}

void ggmlQuantizeQ4_1Row(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float* v = x + b * kBlock;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < kBlock; ++j) {
            min = std::min(min, v[j]);
            max = std::max(max, v[j]);
        }
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        out = putHalf(out, d);
        out = putHalf(out, min);
        for (int j = 0; j < 16; ++j) {
            const uint8_t a = std::min<uint8_t>(15, uint8_t(int8_t((v[j] - min) * id + 0.5f)));
            const uint8_t c = std::min<uint8_t>(15, uint8_t(int8_t((v[16 + j] - min) * id + 0.5f)));
            *out++ = uint8_t(a | (c << 4));
        }
    }
}

} // namespace qs
