// Block-scaled formats: per-group FP4/FP6/FP8 (float or E8M0 scale), OCP MX, NVFP4, and Quark's
// non-scaled MX6 / BFP16. Mirrors quark/torch/kernel/hw_emulation/hw_emulation_interface.py
// (fake_quantize_fp4_fp6_per_group_with_scale, fake_quantize_fp8_per_group_with_scale,
// fake_quantize_mx, fake_quantize_mx6_mx9, fake_quantize_bfp16) and the observers that feed
// them (PerBlockMXObserver.get_scale, SequentialQuantize for NVFP4's scale quantization).
#include "quant/KernelsInternal.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace qs::quant::detail {

namespace {

constexpr double kNvFp4ElementMax = 6.0;
constexpr double kNvFp4ScaleMax = 448.0;

bool usesE8M0(const QuantSpec& spec) {
    const TypeTraits& t = traits(spec.dtype);
    return t.encoding == Encoding::Mx ||
           (t.encoding == Encoding::Float && spec.scaleType == ScaleType::E8M0);
}

// Element format of the block's values (MX rows point at their element row).
DataType elementOf(const QuantSpec& spec) {
    return traits(spec.dtype).element;
}

at::Tensor blockScale(const RowLayout& l, const QuantParams& p, const char* what) {
    const int64_t rows = l.rows.size(0);
    if (!p.scale.defined() || p.scale.numel() != rows)
        throw Error(what, "scale", "expected " + std::to_string(rows) + " block scales");
    return asColumn(p.scale.to(at::kFloat), rows);
}

at::Tensor maskZero(const at::Tensor& s) {
    return s.masked_fill(s == 0, FLT_EPSILON);
}

// MX INT8 elements: Quark fake_quantize_mx runs fake_quantize_int_per_group_affine with
// scale / 64 and codes in [-127, 127]; the per-channel helper clamps scales to the smallest
// normal and adds the (zero) zero point before clamping, which turns -0 into +0.
at::Tensor mxInt8Scale(const at::Tensor& s) {
    return at::clamp_min(divideExact(s, 64.0), FLT_MIN);
}
at::Tensor mxInt8Values(const at::Tensor& xf, const at::Tensor& s64) {
    return at::clamp(at::round(xf * at::reciprocal(s64)) + 0.0, -127.0, 127.0);
}

// fp32 values of the rows on the element grid, given the per-row scale (already masked).
at::Tensor elementGrid(const at::Tensor& xf, const at::Tensor& s, DataType element) {
    const MiniFloatFormat& f = formatOf(element);
    const at::Tensor y = xf / s;
    if (element == DataType::Fp8E4M3 || element == DataType::Fp8E5M2)
        return roundFp8Tensor(y, f); // clamps to +-max, then the float8 cast
    return roundQuarkElementTensor(y.contiguous(), f);
}

} // namespace

QuantParams blockParams(const QuantSpec& spec, const Range& range) {
    if (!range.max.defined())
        throw Error("computeParams", "", "no observed block maxima (observe a tensor first)");
    const TypeTraits& t = traits(spec.dtype);
    QuantParams p;
    p.zeroPoint =
        at::zeros(range.max.sizes(), at::TensorOptions(at::kInt).device(range.max.device()));
    if (usesE8M0(spec)) {
        const TypeTraits& e = traits(t.element);
        p.scale = evenRoundScaleTensor(range.max.to(at::kFloat), e.mbits, e.emax);
        p.scaleCodes = e8m0CodesTensor(p.scale);
        return p;
    }
    if (t.encoding == Encoding::NvFp4) {
        // First stage (FP4 per group, scale_format float32): s1 = amax / 6. Second stage (FP8
        // E4M3 per tensor on the group amax, quant_max_first_level = 6): s2 = gmax / (6 * 448).
        at::Tensor s1 = maskZero(divideExact(range.max.to(at::kFloat), kNvFp4ElementMax));
        at::Tensor gmax = range.globalAmax.defined() ? range.globalAmax.to(at::kFloat)
                                                     : range.max.to(at::kFloat).max();
        at::Tensor s2 = maskZero(divideExact(gmax.reshape({}), kNvFp4ElementMax * kNvFp4ScaleMax));
        const at::Tensor grid =
            roundFp8Tensor(at::clamp(s1 / s2, -kNvFp4ScaleMax, kNvFp4ScaleMax), kFp8E4M3);
        p.scaleCodes = encodeTensor(grid, kFp8E4M3);
        p.scale = grid * s2;
        p.globalScale = s2;
        return p;
    }
    // Per-group FP4/FP6/FP8 with a float scale: amax / fmax, zeros -> eps; computed in the input
    // dtype unless the scale type is float32 (get_scale, scale_format "float32").
    at::Tensor amax = spec.scaleType == ScaleType::Float32 ? range.max.to(at::kFloat) : range.max;
    p.scale = maskZero(divideExact(amax, t.floatMax));
    return p;
}

at::Tensor blockFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const at::Tensor xf = l.rows.to(at::kFloat);
    const at::Tensor s = blockScale(l, p, "fakeQuantize");
    if (spec.dtype == DataType::MxInt8) {
        const at::Tensor s64 = mxInt8Scale(s);
        return mxInt8Values(xf, s64) * s64;
    }
    // NVFP4 quantizes with the masked scale but dequantizes with the stored one (a group whose
    // FP8 scale underflowed to zero comes back as zeros), like Quark's real-quantize/dequantize.
    return elementGrid(xf, maskZero(s), elementOf(spec)) * s;
}

at::Tensor blockCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const at::Tensor xf = l.rows.to(at::kFloat);
    const at::Tensor s = blockScale(l, p, "quantize");
    if (spec.dtype == DataType::MxInt8) {
        const at::Tensor q = mxInt8Values(xf, mxInt8Scale(s));
        return at::where(at::isnan(q), at::zeros_like(q), q).to(at::kInt);
    }
    const DataType element = elementOf(spec);
    return encodeTensor(elementGrid(xf, maskZero(s), element), formatOf(element));
}

at::Tensor blockDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const at::Tensor s = blockScale(l, p, "dequantize");
    if (spec.dtype == DataType::MxInt8)
        return l.rows.to(at::kFloat) * mxInt8Scale(s);
    return decodeTensor(l.rows.contiguous(), formatOf(elementOf(spec))) * s;
}

namespace {

int exponentField(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return static_cast<int>((u >> 23) & 0xFF) - 127;
}

float finiteOrZero(float v) {
    return std::isfinite(v) ? v : 0.0f;
}

// Runs f(block pointer in, block pointer out, block length) over the rows in parallel.
template <typename F> at::Tensor forEachBlock(const RowLayout& l, F f) {
    const at::Tensor xf = toHost(l.rows.to(at::kFloat));
    at::Tensor out = at::empty_like(xf);
    const int64_t n = xf.size(1);
    const float* px = xf.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, xf.size(0), 256, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            f(px + r * n, po + r * n, n);
    });
    return out.to(l.rows.device());
}

} // namespace

at::Tensor mx6Fake(const RowLayout& l) {
    // fake_quantize_mx6_mx9 with quant_bit = 5: the block's largest exponent, minus one for a
    // pair of neighbours that are both at least one binade below it (the shared "prime" bit).
    constexpr int kQuantBit = 5;
    return forEachBlock(l, [](const float* x, float* out, int64_t n) {
        float amax = 0.0f;
        for (int64_t i = 0; i < n; ++i)
            amax = std::max(amax, std::fabs(finiteOrZero(x[i])));
        const int maxExp = exponentField(amax);
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const bool low0 = maxExp - exponentField(finiteOrZero(x[i])) >= 1;
            const bool low1 = maxExp - exponentField(finiteOrZero(x[i + 1])) >= 1;
            const int shared = maxExp - ((low0 && low1) ? 1 : 0);
            const float scale = std::ldexp(1.0f, shared - kQuantBit + 2);
            const double top = std::ldexp(1.0, maxExp + 1) - static_cast<double>(scale);
            const float quantMax = static_cast<float>(std::min(top, double(FLT_MAX))) / scale;
            for (int64_t k = i; k < i + 2; ++k) {
                const float q = std::nearbyint(x[k] / scale);
                out[k] = std::min(std::max(q, -quantMax), quantMax) * scale; // NaN stays NaN
            }
        }
    });
}

at::Tensor bfp16Fake(const RowLayout& l) {
    // fake_quantize_bfp16: 8 int8 mantissas share 2^(floor(log2 amax) - 6); the exponent grows
    // by one when rounding would leave [-128, 127]. NaN and Inf count as 0 (nan_to_num).
    return forEachBlock(l, [](const float* x, float* out, int64_t n) {
        auto scaleFor = [](float amax) {
            const float s = amax == 0.0f ? 0.0f : std::ldexp(1.0f, floorLog2(amax) - 6);
            return s == 0.0f ? FLT_EPSILON : s; // pow(2, -inf) and underflow -> eps
        };
        auto fakeInt = [](float v, float scale, float lo, float hi) {
            const float s = std::max(scale, FLT_MIN);
            const float q = std::min(std::max(std::nearbyint(v * (1.0f / s)) + 0.0f, lo), hi);
            return q * s;
        };
        float amax = 0.0f;
        for (int64_t i = 0; i < n; ++i)
            amax = std::max(amax, std::fabs(finiteOrZero(x[i])));
        const float scale = scaleFor(amax);
        bool overflow = false;
        for (int64_t i = 0; i < n; ++i) {
            const float v = fakeInt(finiteOrZero(x[i]), scale, -129.0f, 128.0f) / scale;
            overflow = overflow || v >= 128.0f || v < -128.0f;
        }
        const float scale2 = scaleFor(overflow ? amax * 2.0f : amax);
        for (int64_t i = 0; i < n; ++i)
            out[i] = fakeInt(finiteOrZero(x[i]), scale2, -128.0f, 127.0f);
    });
}

} // namespace qs::quant::detail
