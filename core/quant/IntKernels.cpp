// Integer affine quantization, written as the same sequence of ATen ops as Quark's
// UniformScalingObserver.calculate_int_quant_params and fake_quantize_per_channel_affine, so the
// dtype of every intermediate (and hence every rounding) matches Quark for fp32 and bf16 inputs.
#include "quant/KernelsInternal.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace qs::quant::detail {

namespace {

at::Tensor epsLike(const at::Tensor& like) {
    // Quark's observer eps: torch.tensor(torch.finfo(torch.float32).eps), a 0-dim fp32 tensor.
    return at::scalar_tensor(FLT_EPSILON, at::TensorOptions(at::kFloat).device(like.device()));
}

void checkRange(const Range& r, const char* what) {
    if (!r.min.defined() || !r.max.defined())
        throw Error(what, "", "no observed range (observe a tensor first)");
}

void checkParams(const QuantParams& p, int64_t rows, const char* what) {
    if (!p.scale.defined() || !p.zeroPoint.defined())
        throw Error(what, "scale", "missing scale or zero point");
    if (p.scale.numel() != rows || p.zeroPoint.numel() != rows)
        throw Error(what, "scale",
                    "expected " + std::to_string(rows) + " scale entries, got " +
                        std::to_string(p.scale.numel()));
}

// Quark PerTensor/PerChannelPowOf2MinMaxObserver._calculate_one_batch_quant_param (after
// quark/onnx/quant_utils.py compute_scale_zp), evaluated in fp32. A zero range uses scale 1 in
// every granularity (Quark only guards the per-tensor case).
QuantParams pow2Params(const QuantSpec& spec, const Range& range) {
    const TypeTraits& t = traits(spec.dtype);
    const double qmin = t.qmin, qmax = t.qmax;
    const at::Tensor mn = toHost(range.min.to(at::kFloat));
    const at::Tensor mx = toHost(range.max.to(at::kFloat));
    at::Tensor scale = at::empty(mn.sizes(), at::kFloat);
    at::Tensor zp = at::empty(mn.sizes(), at::kInt);
    const float* pmn = mn.data_ptr<float>();
    const float* pmx = mx.data_ptr<float>();
    float* ps = scale.data_ptr<float>();
    int32_t* pz = zp.data_ptr<int32_t>();
    for (int64_t i = 0; i < mn.numel(); ++i) {
        float lo = std::min(pmn[i], 0.0f);
        float hi = std::max(pmx[i], 0.0f);
        if (spec.symmetric) {
            const float a = std::max(std::fabs(lo), std::fabs(hi));
            lo = -a;
            hi = a;
        }
        const float dr = hi - lo;
        const float s = dr != 0.0f ? dr / static_cast<float>(qmax - qmin) : 1.0f;
        const auto z0 = static_cast<int32_t>(static_cast<float>(qmin) - lo / s); // truncates
        const float clamped = std::clamp(s, std::ldexp(1.0f, -127), std::ldexp(1.0f, 127));
        const float pos = std::nearbyint(-std::log2(clamped));
        const float p2 = std::pow(2.0f, -pos);
        const float newMin =
            std::min((static_cast<float>(qmin) - static_cast<float>(z0)) * p2, 0.0f);
        auto z = static_cast<int32_t>(std::nearbyint(static_cast<float>(qmin) - newMin / p2));
        if (spec.symmetric && spec.dtype == DataType::Uint8 && z == 127)
            z = 128;
        ps[i] = p2;
        pz[i] = z;
    }
    return {scale.to(range.min.device()), zp.to(range.min.device()), {}, {}};
}

} // namespace

QuantParams intParams(const QuantSpec& spec, const Range& range) {
    checkRange(range, "computeParams");
    if (spec.scaleType == ScaleType::Pow2)
        return pow2Params(spec, range);
    const TypeTraits& t = traits(spec.dtype);
    const at::Tensor eps = epsLike(range.min);
    const at::Tensor minNeg = at::clamp_max(range.min, 0);
    at::Tensor maxPos = at::clamp_min(range.max, 0);
    at::Tensor zp = at::zeros(minNeg.sizes(), at::TensorOptions(at::kInt).device(minNeg.device()));
    at::Tensor scale;
    if (spec.symmetric) {
        maxPos = at::max(-minNeg, maxPos);
        scale = divideExact(maxPos, (t.qmax - t.qmin) / 2.0);
        scale = at::max(scale, eps);
    } else {
        scale = divideExact(maxPos - minNeg, t.qmax - t.qmin);
        scale = at::max(scale, eps);
        zp = at::rsub(at::round(minNeg / scale).to(at::kInt), static_cast<int64_t>(t.qmin));
        zp = at::clamp(zp, static_cast<int64_t>(t.qmin), static_cast<int64_t>(t.qmax));
    }
    if (spec.scaleType == ScaleType::Float32)
        scale = scale.to(at::kFloat);
    return {scale, zp, {}, {}};
}

namespace {

struct IntOperands {
    at::Tensor scale; // [R, 1] fp32, clamped to the smallest normal as Quark does
    at::Tensor zp;    // [R, 1] int32
};

IntOperands operands(const RowLayout& l, const QuantParams& p, const char* what) {
    const int64_t rows = l.rows.size(0);
    checkParams(p, rows, what);
    at::Tensor s = at::clamp_min(asColumn(p.scale.to(at::kFloat), rows), FLT_MIN);
    return {s, asColumn(p.zeroPoint.to(at::kInt), rows)};
}

at::Tensor quantizedValues(const RowLayout& l, const QuantSpec& spec, const IntOperands& o) {
    const TypeTraits& t = traits(spec.dtype);
    const at::Tensor xf = l.rows.to(at::kFloat);
    const at::Tensor inv = at::reciprocal(o.scale);
    return at::clamp(at::round(xf * inv) + o.zp, t.qmin, t.qmax);
}

} // namespace

at::Tensor intFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const IntOperands o = operands(l, p, "fakeQuantize");
    const at::Tensor q = quantizedValues(l, spec, o);
    return (q - o.zp) * o.scale;
}

at::Tensor intCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const IntOperands o = operands(l, p, "quantize");
    const at::Tensor q = quantizedValues(l, spec, o);
    return at::where(at::isnan(q), o.zp.to(at::kFloat).expand_as(q), q).to(at::kInt);
}

at::Tensor intDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const IntOperands o = operands(l, p, "dequantize");
    return (l.rows.to(at::kInt) - o.zp).to(at::kFloat) * o.scale;
}

} // namespace qs::quant::detail
