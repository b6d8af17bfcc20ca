#include "quant/FastGroupQuant.h"

#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qs::quant {

namespace {

// The group length when the spec's groups are contiguous runs of x's last axis, else 0.
int64_t contiguousGroupLength(const at::Tensor& x, const QuantSpec& spec) {
    if (x.dim() < 1 || x.numel() == 0)
        return 0;
    switch (spec.granularity) {
    case Granularity::PerGroup:
        if ((spec.chAxis == -1 || spec.chAxis == x.dim() - 1) && spec.groupSize > 0 &&
            x.size(-1) % spec.groupSize == 0)
            return spec.groupSize;
        return 0;
    case Granularity::PerToken:
        return x.size(-1);
    case Granularity::PerChannel:
        return x.dim() == 2 && spec.chAxis == 0 ? x.size(1) : 0;
    case Granularity::PerTensor:
        return 0;
    }
    return 0;
}

// ATen's maximum/minimum and clamp propagate NaN; std::max/min alone do not in every order.
inline float nanMax(float a, float b) { return std::isnan(a) ? a : (std::isnan(b) ? b : std::max(a, b)); }
inline float clampNan(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

// float -> int32 as the x86 conversion ATen's .to(kInt) compiles to: NaN and out-of-range values
// become INT32_MIN.
inline int32_t toInt32(float v) {
    if (std::isnan(v) || v >= 2147483648.0f || v < -2147483648.0f)
        return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(v);
}

} // namespace

bool fastPathApplies(const at::Tensor& x, const QuantSpec& spec) {
    if (!x.defined() || x.scalar_type() != at::kFloat || !x.device().is_cpu())
        return false;
    if (traits(spec.dtype).encoding != Encoding::Int || spec.observer != ObserverKind::MinMax)
        return false;
    if (spec.scaleType != ScaleType::Float && spec.scaleType != ScaleType::Float32)
        return false;
    return contiguousGroupLength(x, spec) > 0;
}

FastQuantResult fakeQuantizeFast(const at::Tensor& x, const QuantSpec& spec, bool wantCodes) {
    spec.validate("fakeQuantizeFast");
    if (!fastPathApplies(x, spec))
        throw Error("fakeQuantizeFast", "", "the fused path does not apply to this tensor/spec");
    const TypeTraits& t = traits(spec.dtype);
    const at::Tensor src = x.contiguous();
    const int64_t len = contiguousGroupLength(src, spec);
    const int64_t groups = src.numel() / len;

    FastQuantResult r;
    r.fake = at::empty_like(src);
    r.scale = at::empty({groups}, at::kFloat);
    r.zeroPoint = at::empty({groups}, at::kInt);
    if (wantCodes)
        r.codes = at::empty(src.sizes(), at::kInt);

    const float* in = src.data_ptr<float>();
    float* out = r.fake.data_ptr<float>();
    float* scales = r.scale.data_ptr<float>();
    int32_t* zps = r.zeroPoint.data_ptr<int32_t>();
    int32_t* codes = wantCodes ? r.codes.data_ptr<int32_t>() : nullptr;
    const float qmin = static_cast<float>(t.qmin);
    const float qmax = static_cast<float>(t.qmax);
    const float halfRange = static_cast<float>((t.qmax - t.qmin) / 2.0);
    const float fullRange = static_cast<float>(t.qmax - t.qmin);
    const bool symmetric = spec.symmetric;
    const int64_t grain = std::max<int64_t>(1, 32768 / len);

    at::parallel_for(0, groups, grain, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
            const float* p = in + g * len;
            float mn = std::numeric_limits<float>::infinity();
            float mx = -std::numeric_limits<float>::infinity();
            bool nan = false;
            for (int64_t i = 0; i < len; ++i) {
                const float v = p[i];
                nan |= std::isnan(v);
                mn = std::min(mn, v);
                mx = std::max(mx, v);
            }
            if (nan)
                mn = mx = std::numeric_limits<float>::quiet_NaN();
            // Same operations, in the same order and dtype, as intParams + intFake.
            const float minNeg = std::isnan(mn) ? mn : std::min(mn, 0.0f);
            const float maxPos = std::isnan(mx) ? mx : std::max(mx, 0.0f);
            float scale;
            int32_t zp = 0;
            if (symmetric) {
                scale = nanMax(nanMax(-minNeg, maxPos) / halfRange, FLT_EPSILON);
            } else {
                scale = nanMax((maxPos - minNeg) / fullRange, FLT_EPSILON);
                const int32_t rounded = toInt32(std::nearbyint(minNeg / scale));
                zp = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(qmin)) -
                                          static_cast<uint32_t>(rounded)); // int32 wraps as ATen
                zp = std::min(std::max(zp, static_cast<int32_t>(qmin)), static_cast<int32_t>(qmax));
            }
            scales[g] = scale;
            zps[g] = zp;
            const float s = std::isnan(scale) ? scale : std::max(scale, FLT_MIN);
            const float inv = 1.0f / s;
            const auto zpf = static_cast<float>(zp);
            float* o = out + g * len;
            for (int64_t i = 0; i < len; ++i) {
                const float q = clampNan(std::nearbyint(p[i] * inv) + zpf, qmin, qmax);
                o[i] = (q - zpf) * s;
                if (codes)
                    codes[g * len + i] = std::isnan(q) ? zp : static_cast<int32_t>(q);
            }
        }
    });

    const std::vector<int64_t> shape = paramShape(src, spec);
    r.scale = r.scale.reshape(shape);
    r.zeroPoint = r.zeroPoint.reshape(shape);
    r.fake = r.fake.reshape(x.sizes());
    return r;
}

} // namespace qs::quant
