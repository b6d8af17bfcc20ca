// Scalar arithmetic of the small float formats, done by hand on float32 bits because LibTorch
// 1.13 has no float8/float4 dtypes. Everything here is plain C++ (no Torch) so the tensor kernels,
// the packers and the tests share one definition of every rounding and every code.
#pragma once

#include <cstdint>

namespace qs::quant {

// Parameters of an OCP minifloat element format. NaN/Inf encodings differ per format:
// E4M3 ("fn") has no infinity and one NaN pattern per sign (S.1111.111); E5M2 is IEEE-like;
// E3M2, E2M3 and E2M1 have neither.
struct MiniFloatFormat {
    int ebits;
    int mbits;
    int bias;
    float maxNorm;
    enum class Specials : uint8_t { None, NanOnly, InfAndNan } specials;

    int minNormalExponent() const { return 1 - bias; }
    int codeBits() const { return 1 + ebits + mbits; }
};

constexpr MiniFloatFormat kFp8E4M3{4, 3, 7, 448.0f, MiniFloatFormat::Specials::NanOnly};
constexpr MiniFloatFormat kFp8E5M2{5, 2, 15, 57344.0f, MiniFloatFormat::Specials::InfAndNan};
constexpr MiniFloatFormat kFp6E3M2{3, 2, 3, 28.0f, MiniFloatFormat::Specials::None};
constexpr MiniFloatFormat kFp6E2M3{2, 3, 1, 7.5f, MiniFloatFormat::Specials::None};
constexpr MiniFloatFormat kFp4E2M1{2, 1, 1, 6.0f, MiniFloatFormat::Specials::None};

// Round |a| (finite, >= 0) to the nearest value of the format's grid, ties to even, with
// subnormals, without saturation (the result may exceed maxNorm by one grid step).
float roundMagnitudeToGrid(float a, const MiniFloatFormat& f);

// FP8 cast as Quark does it: clamp to +-maxNorm (so +-Inf saturates), round to nearest even;
// NaN stays NaN and the sign of zero is kept (torch's float8 conversion semantics).
float roundFp8(float x, const MiniFloatFormat& f);

// FP4/FP6 element rounding exactly as Quark's fake_quantize_element kernel: NaN and +-Inf are
// returned unchanged, finite values round to nearest even and saturate at maxNorm, and any value
// that rounds to zero (including -0) becomes +0.
float roundQuarkElement(float x, const MiniFloatFormat& f);

// Code of a value that already lies on the format's grid (|v| <= maxNorm). Non-finite inputs:
// E4M3 -> NaN code 0x7F|sign, E5M2 -> 0x7C|sign (Inf) / 0x7F|sign (NaN); FP6/FP4 have no such
// codes: +-Inf saturates to the largest magnitude and NaN maps to the positive largest code.
uint8_t encodeMiniFloat(float v, const MiniFloatFormat& f);
float decodeMiniFloat(uint8_t code, const MiniFloatFormat& f);

// E8M0 shared scale: code = log2(s) + 127 for s = 2^k, k in [-127, 127]; NaN <-> 0xFF.
// Throws std::invalid_argument for a scale that is not such a power of two.
uint8_t encodeE8M0(float scale);
float decodeE8M0(uint8_t code);

// Quark's even_round (quark/torch/quantization/utils.py), the 'even' scale_calculation_mode of
// PerBlockMXObserver: round amax's mantissa up at (2 - 2^-mbits), keep the power of two,
// subtract the element format's emax, clamp the exponent to [-127, 127]. Zero -> 2^(-126-emax)
// clamped; NaN -> NaN; Inf -> 2^127.
float quarkEvenRoundScale(float amax, int elementMbits, int elementEmax);

// floor(log2(a)) for finite a > 0, exact (from the float's bits, subnormals included).
int floorLog2(float a);

// Round to nearest integer, ties to even (what torch.round / std::nearbyint do by default).
float roundHalfEven(float x);

} // namespace qs::quant
