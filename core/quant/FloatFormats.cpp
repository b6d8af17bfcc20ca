#include "quant/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace qs::quant {

namespace {

uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

float floatOf(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

} // namespace

int floorLog2(float a) {
    const uint32_t u = bitsOf(a) & 0x7FFFFFFFu;
    const int biased = static_cast<int>(u >> 23);
    if (biased != 0)
        return biased - 127;
    // Subnormal: the leading one of the 23-bit fraction decides.
    const uint32_t frac = u & 0x7FFFFFu;
    int msb = 31;
    while (msb >= 0 && !(frac & (1u << msb)))
        --msb;
    return msb - 149;
}

float roundHalfEven(float x) {
    return std::nearbyint(x);
}

float roundMagnitudeToGrid(float a, const MiniFloatFormat& f) {
    if (a == 0.0f)
        return 0.0f;
    // The spacing of the grid is 2^(e - mbits) in the binade of a, and the subnormal spacing
    // below the smallest normal exponent. Dividing by a power of two is exact here: the quotient
    // lies in [2^mbits, 2^(mbits+1)) or is a scaled-up subnormal.
    const int e = std::max(floorLog2(a), f.minNormalExponent());
    const float quantum = std::ldexp(1.0f, e - f.mbits);
    return std::nearbyint(a / quantum) * quantum;
}

float roundFp8(float x, const MiniFloatFormat& f) {
    if (std::isnan(x))
        return x;
    const float c = std::clamp(x, -f.maxNorm, f.maxNorm);
    const float r = roundMagnitudeToGrid(std::fabs(c), f);
    return std::signbit(c) ? -r : r;
}

float roundQuarkElement(float x, const MiniFloatFormat& f) {
    if (!std::isfinite(x))
        return x;
    const float r = std::min(roundMagnitudeToGrid(std::fabs(x), f), f.maxNorm);
    if (r == 0.0f)
        return 0.0f;
    return std::signbit(x) ? -r : r;
}

uint8_t encodeMiniFloat(float v, const MiniFloatFormat& f) {
    const int valueBits = f.ebits + f.mbits;
    const uint8_t sign = std::signbit(v) ? static_cast<uint8_t>(1u << valueBits) : 0;
    const uint8_t allOnes = static_cast<uint8_t>((1u << valueBits) - 1);
    // A NaN's sign carries no value and differs between devices (x86 makes Inf / Inf a negative
    // NaN, CUDA a positive one), so every NaN gets the positive NaN code: one code on every
    // device. Formats without NaN get their positive largest magnitude.
    if (std::isnan(v))
        return allOnes;
    if (std::isinf(v)) {
        if (f.specials == MiniFloatFormat::Specials::InfAndNan)
            return static_cast<uint8_t>(sign | (((1u << f.ebits) - 1) << f.mbits));
        if (f.specials == MiniFloatFormat::Specials::NanOnly)
            return static_cast<uint8_t>(sign | allOnes);
        return static_cast<uint8_t>(sign | allOnes);
    }
    const float a = std::min(std::fabs(v), f.maxNorm);
    if (a == 0.0f)
        return sign;
    const int e = floorLog2(a);
    if (e < f.minNormalExponent()) {
        const float quantum = std::ldexp(1.0f, f.minNormalExponent() - f.mbits);
        const auto mant = static_cast<uint32_t>(std::nearbyint(a / quantum));
        return static_cast<uint8_t>(sign | mant);
    }
    const float quantum = std::ldexp(1.0f, e - f.mbits);
    const auto mant = static_cast<uint32_t>(std::nearbyint(a / quantum)) - (1u << f.mbits);
    const auto biased = static_cast<uint32_t>(e + f.bias);
    return static_cast<uint8_t>(sign | (biased << f.mbits) | mant);
}

float decodeMiniFloat(uint8_t code, const MiniFloatFormat& f) {
    const int valueBits = f.ebits + f.mbits;
    const bool negative = (code >> valueBits) & 1u;
    const uint32_t biased = (code >> f.mbits) & ((1u << f.ebits) - 1);
    const uint32_t mant = code & ((1u << f.mbits) - 1);
    const uint32_t maxBiased = (1u << f.ebits) - 1;
    float magnitude;
    if (f.specials == MiniFloatFormat::Specials::NanOnly && biased == maxBiased &&
        mant == (1u << f.mbits) - 1) {
        magnitude = std::numeric_limits<float>::quiet_NaN();
    } else if (f.specials == MiniFloatFormat::Specials::InfAndNan && biased == maxBiased) {
        magnitude = mant == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
    } else if (biased == 0) {
        magnitude = std::ldexp(static_cast<float>(mant), f.minNormalExponent() - f.mbits);
    } else {
        magnitude = std::ldexp(static_cast<float>((1u << f.mbits) | mant),
                               static_cast<int>(biased) - f.bias - f.mbits);
    }
    return negative ? -magnitude : magnitude;
}

uint8_t encodeE8M0(float scale) {
    if (std::isnan(scale))
        return 0xFF;
    int exp = 0;
    const float m = std::frexp(scale, &exp); // scale = m * 2^exp, m in [0.5, 1)
    if (!(scale > 0.0f) || m != 0.5f)
        throw std::invalid_argument("E8M0 scale must be a positive power of two");
    const int k = exp - 1;
    if (k < -127 || k > 127)
        throw std::invalid_argument("E8M0 scale exponent outside [-127, 127]");
    return static_cast<uint8_t>(k + 127);
}

float decodeE8M0(uint8_t code) {
    if (code == 0xFF)
        return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

float quarkEvenRoundScale(float amax, int elementMbits, int elementEmax) {
    if (std::isnan(amax))
        return amax;
    float rounded;
    if (amax == 0.0f) {
        rounded = std::ldexp(1.0f, -126); // Quark fills zeros with the smallest fp32 normal
    } else {
        // Adding half of the element's last mantissa step to the fp32 bits and keeping only sign
        // and exponent moves amax to the next power of two when its mantissa is at least
        // 2 - 2^-(mbits+1) (OCP MX v1.0 section 6.3 as Quark implements it).
        uint32_t u = bitsOf(amax);
        u += 1u << (23 - elementMbits - 1);
        u &= 0x1FFu << 23;
        rounded = floatOf(u);
    }
    float e;
    if (rounded == 0.0f)
        e = -std::numeric_limits<float>::infinity(); // fp32 subnormal amax
    else if (std::isinf(rounded))
        e = std::numeric_limits<float>::infinity();
    else
        e = static_cast<float>(floorLog2(rounded));
    e = std::clamp(e - static_cast<float>(elementEmax), -127.0f, 127.0f);
    return std::ldexp(1.0f, static_cast<int>(e));
}

} // namespace qs::quant
