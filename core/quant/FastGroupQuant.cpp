#include "quant/FastGroupQuant.h"

#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"
#include "util/LargeTensor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
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
inline float nanMax(float a, float b) {
    return std::isnan(a) ? a : (std::isnan(b) ? b : std::max(a, b));
}

// Min and max of the finite-or-infinite values (NaN skipped) and whether a NaN was seen. The
// select form `v < m ? v : m` is what minps computes, so the vector lanes and the scalar tail
// agree; GCC will not vectorise this reduction by itself without -ffinite-math-only, hence the
// explicit 8-lane vectors (GCC/Clang vector extensions). Always inlined, so each clone of the
// multiversioned callers compiles it for its own target: one ymm per step under AVX2, two xmm
// otherwise.
#if defined(__GNUC__)
#define QS_ALWAYS_INLINE __attribute__((always_inline)) inline
typedef float Lanes8 __attribute__((vector_size(32)));
typedef int32_t Mask8 __attribute__((vector_size(32)));
#else
#define QS_ALWAYS_INLINE inline
#endif

QS_ALWAYS_INLINE bool groupMinMax(const float* p, int64_t len, float& mn, float& mx) {
    mn = std::numeric_limits<float>::infinity();
    mx = -std::numeric_limits<float>::infinity();
    int64_t i = 0;
    bool nan = false;
#if defined(__GNUC__)
    Lanes8 vmn, vmx;
    for (int k = 0; k < 8; ++k) {
        vmn[k] = mn;
        vmx[k] = mx;
    }
    Mask8 vnan = {0, 0, 0, 0, 0, 0, 0, 0};
    for (; i + 8 <= len; i += 8) {
        Lanes8 v;
        std::memcpy(&v, p + i, sizeof v);
        vnan |= (v != v);
        vmn = v < vmn ? v : vmn;
        vmx = v > vmx ? v : vmx;
    }
    for (int k = 0; k < 8; ++k) {
        mn = vmn[k] < mn ? vmn[k] : mn;
        mx = vmx[k] > mx ? vmx[k] : mx;
        nan |= vnan[k] != 0;
    }
#endif
    for (; i < len; ++i) {
        const float v = p[i];
        nan |= v != v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    return nan;
}

// float -> int32 as the x86 conversion ATen's .to(kInt) compiles to: NaN and out-of-range values
// become INT32_MIN.
inline int32_t toInt32(float v) {
    if (std::isnan(v) || v >= 2147483648.0f || v < -2147483648.0f)
        return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(v);
}

struct GroupJob {
    const float* in;
    float* out;
    float* scales;
    int32_t* zps;
    int32_t* codes;
    int64_t len;
    float qmin, qmax, halfRange, fullRange;
    bool symmetric;
};

// GCC builds an AVX2 and a baseline copy and picks one at load time; neither may contract
// into FMA (not in the "avx2" target), so both give the same bits as the generic path.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define QS_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define QS_MULTIVERSION
#endif

// The integer grid of one group: scale, zero point and the clamped round-to-nearest of a value.
// Shared by the dynamic kernel (parameters computed here) and the static one (frozen parameters),
// so both perform the operations of intFake in the same order and dtype.
struct IntGrid {
    float s, inv, zpf, lo, hi, qmin, qmax;

    IntGrid(float scale, int32_t zp, float qmin_, float qmax_) : qmin(qmin_), qmax(qmax_) {
        s = std::isnan(scale) ? scale : std::max(scale, FLT_MIN); // clamp_min keeps NaN
        inv = 1.0f / s;
        zpf = static_cast<float>(zp);
        // round(v) + zp clamped to [qmin, qmax] equals the same with v first clamped to
        // [qmin - zp - 1, qmax - zp + 1]; inside that range adding and subtracting 1.5 * 2^23
        // rounds to the nearest integer, ties to even, exactly as nearbyint. NaN passes
        // through every select unchanged, as through ATen's clamp.
        lo = qmin - zpf - 1.0f;
        hi = qmax - zpf + 1.0f;
    }
    float code(float x) const {
        constexpr float kMagic = 12582912.0f;
        float v = x * inv;
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        float q = ((v + kMagic) - kMagic) + zpf;
        q = q < qmin ? qmin : q;
        return q > qmax ? qmax : q;
    }
    float fake(float x) const { return (code(x) - zpf) * s; }
};

QS_MULTIVERSION void quantizeGroups(const GroupJob& j, int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
        const float* p = j.in + g * j.len;
        float mn, mx;
        const bool nan = groupMinMax(p, j.len, mn, mx);
        if (nan) // aminmax propagates NaN
            mn = mx = std::numeric_limits<float>::quiet_NaN();
        // Same operations, in the same order and dtype, as intParams + intFake.
        const float minNeg = std::isnan(mn) ? mn : std::min(mn, 0.0f);
        const float maxPos = std::isnan(mx) ? mx : std::max(mx, 0.0f);
        float scale;
        int32_t zp = 0;
        if (j.symmetric) {
            scale = nanMax(nanMax(-minNeg, maxPos) / j.halfRange, FLT_EPSILON);
        } else {
            scale = nanMax((maxPos - minNeg) / j.fullRange, FLT_EPSILON);
            const int32_t rounded = toInt32(std::nearbyint(minNeg / scale));
            zp = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(j.qmin)) -
                                      static_cast<uint32_t>(rounded)); // int32 wraps as ATen
            zp = std::min(std::max(zp, static_cast<int32_t>(j.qmin)), static_cast<int32_t>(j.qmax));
        }
        j.scales[g] = scale;
        j.zps[g] = zp;
        const IntGrid grid(scale, zp, j.qmin, j.qmax);
        // Codes first: with `out` aliasing the input, the output loop overwrites p.
        if (j.codes) {
            int32_t* c = j.codes + g * j.len;
            for (int64_t i = 0; i < j.len; ++i) {
                const float q = grid.code(p[i]);
                c[i] = std::isnan(q) ? zp : static_cast<int32_t>(q);
            }
        }
        float* o = j.out + g * j.len;
        // o may be p itself (in place): iteration i reads only p[i] before writing o[i].
        for (int64_t i = 0; i < j.len; ++i)
            o[i] = grid.fake(p[i]);
    }
}

// Static form: elements [begin, end) of groups of `len` values with frozen parameters.
QS_MULTIVERSION void applyGroupParams(const float* in, float* out, int64_t begin, int64_t end,
                                      int64_t len, const float* scales, const int32_t* zps,
                                      float qmin, float qmax) {
    int64_t i = begin;
    while (i < end) {
        const int64_t g = i / len;
        const int64_t stop = std::min(end, (g + 1) * len);
        const IntGrid grid(scales[g], zps[g], qmin, qmax);
        for (; i < stop; ++i)
            out[i] = grid.fake(in[i]);
    }
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

FastQuantResult fakeQuantizeFast(const at::Tensor& x, const QuantSpec& spec, bool wantCodes,
                                 at::Tensor out) {
    spec.validate("fakeQuantizeFast");
    if (!fastPathApplies(x, spec))
        throw Error("fakeQuantizeFast", "", "the fused path does not apply to this tensor/spec");
    const TypeTraits& t = traits(spec.dtype);
    const at::Tensor src = x.contiguous();
    const int64_t len = contiguousGroupLength(src, spec);
    const int64_t groups = src.numel() / len;

    FastQuantResult r;
    if (out.defined()) {
        if (out.scalar_type() != at::kFloat || !out.device().is_cpu() || !out.is_contiguous() ||
            out.sizes() != x.sizes())
            throw Error("fakeQuantizeFast", "out",
                        "must be a contiguous float32 CPU tensor of the input's shape");
        r.fake = out;
    } else {
        r.fake = emptyLargeCpu(src.sizes().vec(), at::kFloat);
    }
    r.scale = at::empty({groups}, at::kFloat);
    r.zeroPoint = at::empty({groups}, at::kInt);
    if (wantCodes)
        r.codes = emptyLargeCpu(src.sizes().vec(), at::kInt);

    const float* in = src.data_ptr<float>();
    float* result = r.fake.data_ptr<float>();
    float* scales = r.scale.data_ptr<float>();
    int32_t* zps = r.zeroPoint.data_ptr<int32_t>();
    int32_t* codes = wantCodes ? r.codes.data_ptr<int32_t>() : nullptr;
    const float qmin = static_cast<float>(t.qmin);
    const float qmax = static_cast<float>(t.qmax);
    const float halfRange = static_cast<float>((t.qmax - t.qmin) / 2.0);
    const float fullRange = static_cast<float>(t.qmax - t.qmin);
    const int64_t grain = std::max<int64_t>(1, 32768 / len);

    const GroupJob job{in,   result, scales,    zps,       codes,         len,
                       qmin, qmax,   halfRange, fullRange, spec.symmetric};
    at::parallel_for(0, groups, grain,
                     [&](int64_t begin, int64_t end) { quantizeGroups(job, begin, end); });

    const std::vector<int64_t> shape = paramShape(src, spec);
    r.scale = r.scale.reshape(shape);
    r.zeroPoint = r.zeroPoint.reshape(shape);
    r.fake = r.fake.reshape(x.sizes());
    return r;
}

namespace {
std::atomic<bool> g_fusedStatic{true};
} // namespace

void setFusedStaticKernelEnabled(bool enabled) {
    g_fusedStatic = enabled;
}

bool fastParamsPathApplies(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params) {
    if (!g_fusedStatic)
        return false;
    if (!x.defined() || x.scalar_type() != at::kFloat || !x.device().is_cpu() || x.numel() == 0)
        return false;
    if (traits(spec.dtype).encoding != Encoding::Int || !params.scale.defined() ||
        !params.zeroPoint.defined() || !params.scale.device().is_cpu())
        return false;
    const int64_t len =
        spec.granularity == Granularity::PerTensor ? x.numel() : contiguousGroupLength(x, spec);
    return len > 0 && params.scale.numel() == x.numel() / len &&
           params.zeroPoint.numel() == params.scale.numel();
}

at::Tensor fakeQuantizeFastWithParams(const at::Tensor& x, const QuantSpec& spec,
                                      const QuantParams& params) {
    if (!fastParamsPathApplies(x, spec, params))
        throw Error("fakeQuantizeFastWithParams", "",
                    "the fused path does not apply to this tensor/spec/parameters");
    const TypeTraits& t = traits(spec.dtype);
    const at::Tensor src = x.contiguous();
    const int64_t len =
        spec.granularity == Granularity::PerTensor ? src.numel() : contiguousGroupLength(src, spec);
    const at::Tensor scales = params.scale.to(at::kFloat).contiguous();
    const at::Tensor zps = params.zeroPoint.to(at::kInt).contiguous();
    at::Tensor out = at::empty_like(src);
    const float* in = src.data_ptr<float>();
    float* result = out.data_ptr<float>();
    const float* ps = scales.data_ptr<float>();
    const int32_t* pz = zps.data_ptr<int32_t>();
    const auto qmin = static_cast<float>(t.qmin);
    const auto qmax = static_cast<float>(t.qmax);
    at::parallel_for(0, src.numel(), 32768, [&](int64_t begin, int64_t end) {
        applyGroupParams(in, result, begin, end, len, ps, pz, qmin, qmax);
    });
    return out.reshape(x.sizes());
}

} // namespace qs::quant
