#include "io/GgmlKQuants.h"

#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace qs {

namespace {

constexpr float kGroupMaxEps = 1e-15f; // ggml's GROUP_MAX_EPS: below it a group is all zero

uint16_t halfBits(float f) {
    return c10::Half(f).x; // round to nearest even, as ggml's GGML_FP32_TO_FP16
}

float halfValue(const uint8_t* p) {
    c10::Half h;
    std::memcpy(&h.x, p, 2);
    return float(h);
}

void storeHalf(uint8_t* p, float f) {
    const uint16_t h = halfBits(f);
    std::memcpy(p, &h, 2);
}

// Round to nearest, ties to even, by adding 1.5 * 2^23 (ggml's nearest_int: the float addition
// does the rounding; valid for |x| < 2^22).
int nearestInt(float x) {
    const float shifted = x + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

// Scale and min of one Q4_K sub-block: codes L in [0, nmax] with x ~ scale * L - theMin.
// Starts from the min/max grid, then tries nstep+1 grid widths (nmax + rmin + rdelta*k) and
// keeps the weighted least-squares fit with the smallest weighted squared error.
float fitScaleAndMin(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                     float* theMin, uint8_t* candidate, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sumW = weights[0];
    float sumX = sumW * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        const float w = weights[i];
        sumW += w;
        sumX += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *theMin = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float bestError = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearestInt(iscale * (x[i] - min));
        L[i] = uint8_t(std::max(0, std::min(nmax, l)));
        const float diff = scale * L[i] + min - x[i];
        bestError += weights[i] * (diff * diff);
    }
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * step + nmax) / (max - min);
        float sumL = 0, sumL2 = 0, sumXL = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::max(0, std::min(nmax, nearestInt(iscale * (x[i] - min))));
            candidate[i] = uint8_t(l);
            const float w = weights[i];
            sumL += w * l;
            sumL2 += w * l * l;
            sumXL += w * l * x[i];
        }
        const float det = sumW * sumL2 - sumL * sumL;
        if (det > 0) {
            float thisScale = (sumW * sumXL - sumX * sumL) / det;
            float thisMin = (sumL2 * sumX - sumL * sumXL) / det;
            if (thisMin > 0) {
                thisMin = 0;
                thisScale = sumXL / sumL2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = thisScale * candidate[i] + thisMin - x[i];
                error += weights[i] * (diff * diff);
            }
            if (error < bestError) {
                std::copy(candidate, candidate + n, L);
                bestError = error;
                scale = thisScale;
                min = thisMin;
            }
        }
    }
    *theMin = -min;
    return scale;
}

// Symmetric scale of one Q6_K sub-block: codes L in [0, 2*nmax) with x ~ scale * (L - nmax),
// weights x^2 (ggml's rmse_type 1); 18 grid widths around nmax tried after the first.
float fitSymmetricScale(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.0f;
    }
    auto fit = [&](float iscale, float& sumLX, float& sumL2) {
        sumLX = sumL2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::max(-nmax, std::min(nmax - 1, nearestInt(iscale * x[i])));
            const float w = x[i] * x[i];
            sumLX += w * x[i] * l;
            sumL2 += w * l * l;
        }
    };
    auto store = [&](float iscale) {
        for (int i = 0; i < n; ++i)
            L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, nearestInt(iscale * x[i]))));
    };
    float iscale = -nmax / max;
    float sumLX, sumL2;
    fit(iscale, sumLX, sumL2);
    store(iscale);
    float scale = sumL2 ? sumLX / sumL2 : 0.0f;
    float best = scale * sumLX;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0)
            continue;
        iscale = -(nmax + 0.1f * step) / max;
        fit(iscale, sumLX, sumL2);
        if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
            store(iscale);
            scale = sumLX / sumL2;
            best = scale * sumLX;
        }
    }
    return scale;
}

// Q4_K's 12 scale bytes: sub-blocks 0-3 keep scale and min in the low 6 bits of bytes j and
// j+4; sub-blocks 4-7 put their low 4 bits in byte j+4 and their top 2 bits in the top bits of
// bytes j-4 (scale) and j (min).
void scaleAndMinOf(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

} // namespace

void ggmlQuantizeQ4KRow(const float* x, int64_t n, uint8_t* out) {
    uint8_t L[kGgmlSuperBlock];
    uint8_t candidate[32];
    float weights[32];
    float scales[8], mins[8];
    for (int64_t b = 0; b < n / kGgmlSuperBlock; ++b, x += kGgmlSuperBlock) {
        uint8_t* block = out + b * kQ4KBlockBytes;
        uint8_t* packedScales = block + 4;
        uint8_t* codes = block + 16;
        float maxScale = 0, maxMin = 0; // the min is subtracted: scales are never negative
        for (int j = 0; j < 8; ++j) {
            const float* v = x + 32 * j;
            float sumX2 = 0;
            for (int l = 0; l < 32; ++l)
                sumX2 += v[l] * v[l];
            const float rms = std::sqrt(sumX2 / 32);
            for (int l = 0; l < 32; ++l)
                weights[l] = rms + std::fabs(v[l]);
            scales[j] =
                fitScaleAndMin(32, 15, v, weights, L + 32 * j, &mins[j], candidate, -1.f, 0.1f, 20);
            if (scales[j] > maxScale)
                maxScale = scales[j];
            if (mins[j] > maxMin)
                maxMin = mins[j];
        }
        const float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        const float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        for (int j = 0; j < 8; ++j) {
            const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearestInt(invScale * scales[j])));
            const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearestInt(invMin * mins[j])));
            if (j < 4) {
                packedScales[j] = ls;
                packedScales[j + 4] = lm;
            } else {
                packedScales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
                packedScales[j - 4] |= uint8_t((ls >> 4) << 6);
                packedScales[j] |= uint8_t((lm >> 4) << 6);
            }
        }
        storeHalf(block, maxScale / 63.f);
        storeHalf(block + 2, maxMin / 63.f);
        // Codes again against the stored (f16 and 6-bit) scale and min; a zero scale keeps the
        // sub-block's fitted codes, as ggml does.
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            scaleAndMinOf(j, packedScales, &sc, &m);
            const float d = halfValue(block) * sc;
            if (!d)
                continue;
            const float dm = halfValue(block + 2) * m;
            for (int i = 0; i < 32; ++i)
                L[32 * j + i] =
                    uint8_t(std::max(0, std::min(15, nearestInt((x[32 * j + i] + dm) / d))));
        }
        for (int j = 0; j < kGgmlSuperBlock; j += 64)
            for (int l = 0; l < 32; ++l)
                codes[j / 2 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    }
}

void ggmlDequantizeQ4KRow(const uint8_t* blocks, int64_t n, float* y) {
    for (int64_t b = 0; b < n / kGgmlSuperBlock; ++b) {
        const uint8_t* block = blocks + b * kQ4KBlockBytes;
        const float d = halfValue(block), min = halfValue(block + 2);
        const uint8_t* q = block + 16;
        for (int j = 0; j < kGgmlSuperBlock; j += 64, q += 32) {
            uint8_t sc, m;
            scaleAndMinOf(j / 32, block + 4, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            scaleAndMinOf(j / 32 + 1, block + 4, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void ggmlQuantizeQ6KRow(const float* x, int64_t n, uint8_t* out) {
    int8_t L[kGgmlSuperBlock];
    float scales[16];
    for (int64_t b = 0; b < n / kGgmlSuperBlock; ++b, x += kGgmlSuperBlock) {
        uint8_t* block = out + b * kQ6KBlockBytes;
        uint8_t* ql = block;
        uint8_t* qh = block + 128;
        int8_t* blockScales = reinterpret_cast<int8_t*>(block + 192);
        uint8_t* dBytes = block + 208;
        float maxScale = 0, maxAbsScale = 0;
        for (int s = 0; s < 16; ++s) {
            scales[s] = fitSymmetricScale(16, 32, x + 16 * s, L + 16 * s);
            const float a = std::fabs(scales[s]);
            if (a > maxAbsScale) {
                maxAbsScale = a;
                maxScale = scales[s];
            }
        }
        if (maxAbsScale < kGroupMaxEps) {
            std::memset(block, 0, kQ6KBlockBytes);
            storeHalf(dBytes, 0.f);
            continue;
        }
        const float iscale = -128.f / maxScale;
        storeHalf(dBytes, 1 / iscale);
        for (int s = 0; s < 16; ++s)
            blockScales[s] = int8_t(std::min(127, nearestInt(iscale * scales[s])));
        for (int s = 0; s < 16; ++s) {
            const float d = halfValue(dBytes) * blockScales[s];
            if (!d)
                continue;
            for (int i = 0; i < 16; ++i)
                L[16 * s + i] =
                    int8_t(32 + std::max(-32, std::min(31, nearestInt(x[16 * s + i] / d))));
        }
        for (int j = 0; j < kGgmlSuperBlock; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
                ql[l] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
                ql[l + 32] = uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
                qh[l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
    }
}

void ggmlDequantizeQ6KRow(const uint8_t* blocks, int64_t n, float* y) {
    for (int64_t b = 0; b < n / kGgmlSuperBlock; ++b) {
        const uint8_t* block = blocks + b * kQ6KBlockBytes;
        const uint8_t* ql = block;
        const uint8_t* qh = block + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(block + 192);
        const float d = halfValue(block + 208);
        for (int j = 0; j < kGgmlSuperBlock; j += 128, y += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
    }
}

} // namespace qs
