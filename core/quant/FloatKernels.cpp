// Scaled minifloat quantization (FP8 per tensor/channel/token) and the elementwise minifloat
// helpers every float family uses. The rounding itself is FloatFormats.cpp applied per element;
// the surrounding arithmetic mirrors Quark's fake_quantize_fp8_per_{tensor,channel}_with_scale,
// which divide and multiply in the input's dtype.
#include "quant/KernelsInternal.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/Parallel.h>

#include <cfloat>

namespace qs::quant::detail {

namespace {

// The element arithmetic is scalar C++ on the host: device tensors make a round trip through
// host memory (a CUDA build still works, just not at device speed).
template <typename In, typename Out, typename F>
at::Tensor mapElements(const at::Tensor& in, at::ScalarType outType, F f) {
    const at::Tensor src = toHost(in);
    at::Tensor out = at::empty(src.sizes(), src.options().dtype(outType));
    const In* ps = src.data_ptr<In>();
    Out* po = out.data_ptr<Out>();
    at::parallel_for(0, src.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            po[i] = f(ps[i]);
    });
    return out.to(in.device());
}

void checkFloat32(const at::Tensor& t, const char* what) {
    if (t.scalar_type() != at::kFloat)
        throw Error(what, "", "expected a float32 tensor");
}

} // namespace

const MiniFloatFormat& formatOf(DataType elementType) {
    switch (elementType) {
    case DataType::Fp8E4M3:
        return kFp8E4M3;
    case DataType::Fp8E5M2:
        return kFp8E5M2;
    case DataType::Fp6E3M2:
        return kFp6E3M2;
    case DataType::Fp6E2M3:
        return kFp6E2M3;
    case DataType::Fp4:
        return kFp4E2M1;
    default:
        throw Error("quantize", "dtype", dataTypeName(elementType) + " is not a minifloat format");
    }
}

at::Tensor roundFp8Tensor(const at::Tensor& x, const MiniFloatFormat& f) {
    checkFloat32(x, "roundFp8");
    return mapElements<float, float>(x, at::kFloat, [&f](float v) { return roundFp8(v, f); });
}

at::Tensor roundQuarkElementTensor(const at::Tensor& x, const MiniFloatFormat& f) {
    checkFloat32(x, "roundElement");
    return mapElements<float, float>(x, at::kFloat,
                                     [&f](float v) { return roundQuarkElement(v, f); });
}

at::Tensor encodeTensor(const at::Tensor& values, const MiniFloatFormat& f) {
    checkFloat32(values, "encode");
    return mapElements<float, uint8_t>(values, at::kByte,
                                       [&f](float v) { return encodeMiniFloat(v, f); });
}

at::Tensor decodeTensor(const at::Tensor& codes, const MiniFloatFormat& f) {
    if (codes.scalar_type() != at::kByte)
        throw Error("decode", "", "expected uint8 codes");
    return mapElements<uint8_t, float>(codes, at::kFloat,
                                       [&f](uint8_t c) { return decodeMiniFloat(c, f); });
}

at::Tensor evenRoundScaleTensor(const at::Tensor& amax, int mbits, int emax) {
    checkFloat32(amax, "evenRound");
    return mapElements<float, float>(amax, at::kFloat,
                                     [=](float a) { return quarkEvenRoundScale(a, mbits, emax); });
}

at::Tensor e8m0CodesTensor(const at::Tensor& scale) {
    checkFloat32(scale, "e8m0");
    return mapElements<float, uint8_t>(scale, at::kByte, [](float s) { return encodeE8M0(s); });
}

QuantParams floatParams(const QuantSpec& spec, const Range& range) {
    if (!range.min.defined() || !range.max.defined())
        throw Error("computeParams", "", "no observed range (observe a tensor first)");
    const TypeTraits& t = traits(spec.dtype);
    // Quark calculate_fp8_quant_parameters + get_scale(scale_format="float32").
    const at::Tensor minNeg = at::minimum(range.min, at::zeros_like(range.min));
    const at::Tensor maxPos = at::maximum(range.max, at::zeros_like(range.max));
    at::Tensor amax = at::maximum(minNeg.abs(), maxPos.abs());
    if (spec.scaleType == ScaleType::Float32)
        amax = amax.to(at::kFloat);
    at::Tensor scale = divideExact(amax, t.floatMax);
    scale = scale.masked_fill(scale == 0, FLT_EPSILON);
    at::Tensor zp = at::zeros(scale.sizes(), at::TensorOptions(at::kInt).device(scale.device()));
    return {scale, zp, {}, {}};
}

namespace {

at::Tensor scaleColumn(const RowLayout& l, const QuantSpec& spec, const QuantParams& p,
                       at::ScalarType dtype, const char* what) {
    const int64_t rows = l.rows.size(0);
    if (!p.scale.defined() || p.scale.numel() != rows)
        throw Error(what, "scale", "expected " + std::to_string(rows) + " scale entries");
    // Per tensor Quark divides by the 0-dim scale as is and lets ATen promote; per channel it
    // casts the scale to the input dtype first.
    // The scale moves to the rows' device: a 0-dim CPU scale beside CUDA rows would be taken as
    // a CPU scalar and divided by reciprocal (divideExact).
    const at::Tensor scale = p.scale.to(l.rows.device());
    if (spec.granularity == Granularity::PerTensor)
        return dtype == at::kFloat ? scale.reshape({}).to(at::kFloat) : scale.reshape({});
    return asColumn(scale.to(dtype), rows);
}

// Values on the FP8 grid (fp32) for the rows, with Quark's input-dtype division.
at::Tensor fp8Grid(const RowLayout& l, const QuantSpec& spec, const at::Tensor& s) {
    const MiniFloatFormat& f = formatOf(spec.dtype);
    at::Tensor y = l.rows / s;
    y = at::clamp(y, -static_cast<double>(f.maxNorm), static_cast<double>(f.maxNorm));
    return roundFp8Tensor(y.to(at::kFloat), f);
}

} // namespace

at::Tensor floatFake(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const at::ScalarType dt = l.rows.scalar_type();
    const at::Tensor s = scaleColumn(l, spec, p, dt, "fakeQuantize");
    return fp8Grid(l, spec, s).to(dt) * s;
}

at::Tensor floatCodes(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    const at::Tensor s = scaleColumn(l, spec, p, l.rows.scalar_type(), "quantize");
    return encodeTensor(fp8Grid(l, spec, s), formatOf(spec.dtype));
}

at::Tensor floatDequant(const RowLayout& l, const QuantSpec& spec, const QuantParams& p) {
    // Quark dequantize_fp8_per_{tensor,channel}_with_scale: codes to fp32 times the scale.
    const at::Tensor s = scaleColumn(l, spec, p, at::kFloat, "dequantize");
    return decodeTensor(l.rows, formatOf(spec.dtype)) * s;
}

} // namespace qs::quant::detail
