#include "quant/Quantize.h"

#include "quant/FastGroupQuant.h"
#include "quant/KernelsInternal.h"
#include "quant/Observer.h"
#include "util/Error.h"

#include <cmath>
#include <tuple>
#include <utility>

namespace qs::quant {

namespace detail {

namespace {

int64_t normalizeAxis(int64_t axis, int64_t dim) {
    const int64_t a = axis < 0 ? axis + dim : axis;
    if (a < 0 || a >= dim)
        throw Error("quantize", "ch_axis",
                    "axis " + std::to_string(axis) + " is out of range for a " +
                        std::to_string(dim) + "-D tensor");
    return a;
}

} // namespace

void checkInput(const at::Tensor& x, const char* what) {
    if (!x.defined())
        throw Error(what, "", "undefined tensor");
    const auto t = x.scalar_type();
    if (t != at::kFloat && t != at::kBFloat16 && t != at::kHalf)
        throw Error(what, "dtype",
                    std::string("expected a float32, bfloat16 or float16 tensor, got ") +
                        c10::toString(t));
}

at::Tensor asColumn(const at::Tensor& t, int64_t rows) {
    return t.reshape({rows, 1});
}

RowLayout makeRows(const at::Tensor& x, const QuantSpec& spec) {
    RowLayout l;
    const int64_t dim = x.dim();
    switch (spec.granularity) {
    case Granularity::PerTensor:
        l.rows = x.reshape({1, -1});
        return l;
    case Granularity::PerToken: {
        if (dim < 1)
            throw Error("quantize", "qscheme", "per_token needs at least a 1-D tensor");
        l.rows = x.reshape({-1, x.size(-1)});
        const auto sizes = x.sizes();
        l.paramShape.assign(sizes.begin(), sizes.end() - 1);
        return l;
    }
    case Granularity::PerChannel: {
        l.axis = normalizeAxis(spec.chAxis, dim);
        l.pivot = 0;
        l.swapped = true;
        const at::Tensor y = x.transpose(l.axis, 0);
        l.swappedShape.assign(y.sizes().begin(), y.sizes().end());
        l.rows = y.reshape({y.size(0), -1});
        l.paramShape = {y.size(0)};
        return l;
    }
    case Granularity::PerGroup: {
        l.axis = normalizeAxis(spec.chAxis, dim);
        l.pivot = dim - 1;
        l.swapped = true;
        at::Tensor y = x.transpose(l.axis, dim - 1);
        l.swappedShape.assign(y.sizes().begin(), y.sizes().end());
        const int64_t g = spec.groupSize;
        l.origLast = y.size(-1);
        l.paddedLast = (l.origLast + g - 1) / g * g;
        if (l.paddedLast != l.origLast) {
            if (traits(spec.dtype).encoding == Encoding::Int)
                throw Error("quantize", "group_size",
                            "axis length " + std::to_string(l.origLast) +
                                " is not divisible by group size " + std::to_string(g));
            y = at::constant_pad_nd(y, {0, l.paddedLast - l.origLast}, 0);
        }
        l.rows = y.reshape({-1, g});
        l.paramShape.assign(l.swappedShape.begin(), l.swappedShape.end() - 1);
        l.paramShape.push_back(l.paddedLast / g);
        return l;
    }
    }
    return l;
}

at::Tensor RowLayout::restore(const at::Tensor& rowsOut) const {
    if (!swapped) {
        return rowsOut; // caller reshapes to the input's shape
    }
    if (pivot == 0)
        return rowsOut.reshape(swappedShape).transpose(axis, 0);
    std::vector<int64_t> padded = swappedShape;
    padded.back() = paddedLast;
    at::Tensor y = rowsOut.reshape(padded);
    if (paddedLast != origLast)
        y = y.narrow(-1, 0, origLast);
    return y.transpose(axis, pivot);
}

} // namespace detail

using namespace detail;

namespace {

at::Tensor finish(const RowLayout& l, const at::Tensor& rowsOut, const at::Tensor& like) {
    at::Tensor out = l.swapped ? l.restore(rowsOut) : rowsOut.reshape(like.sizes());
    return out.contiguous();
}

void checkSpec(const QuantSpec& spec) {
    spec.validate("quantize");
}

// The range of one row holding a whole tensor (a per-tensor observer: a static activation
// quantizer sees every token of every batch), on the CPU. ATen reduces a row along its
// dimension in one serial scalar loop (LibTorch 1.13: about 2 ns an element on this machine;
// 0.8 s of int8 Analyze's 16.2 s on the 100M, 1.0 s of an int8 eval's 7.5 s); its all-reduce is
// vectorised and threaded. The two agree on every value except a zero, where the all-reduce may
// return +0 for a first extreme of -0, and a NaN's payload: those results are left undefined
// and the caller takes the row's loop, so the range is the one aminmax(rows, 1) gives, to the
// bit.
std::pair<at::Tensor, at::Tensor> tensorRangeOnCpu(const at::Tensor& rows) {
    auto [mn, mx] = at::aminmax(rows);
    const float lo = mn.item<float>(), hi = mx.item<float>();
    if (lo == 0.0f || hi == 0.0f || std::isnan(lo) || std::isnan(hi))
        return {};
    return {mn.reshape({1}), mx.reshape({1})};
}

} // namespace

std::vector<int64_t> paramShape(const at::Tensor& x, const QuantSpec& spec) {
    return makeRows(x, spec).paramShape;
}

Range observeRange(const at::Tensor& x, const QuantSpec& spec) {
    checkInput(x, "observe");
    checkSpec(spec);
    Range r;
    r.inputDtype = x.scalar_type();
    const TypeTraits& t = traits(spec.dtype);
    if (t.kernel == Kernel::Cast || t.kernel == Kernel::Mx6 || t.kernel == Kernel::Bfp16)
        return r;
    if (x.numel() == 0)
        throw Error("observe", "", "cannot observe an empty tensor");
    const RowLayout l = makeRows(x, spec);
    const bool blockAmax = t.encoding != Encoding::Int && spec.granularity == Granularity::PerGroup;
    if (blockAmax) {
        // Quark PerBlockMXObserver: torch.max(|x|) per block, NaN propagating.
        r.max = std::get<0>(l.rows.abs().max(1)).reshape(l.paramShape);
        if (t.encoding == Encoding::NvFp4)
            r.globalAmax = r.max.max().to(at::kFloat);
        return r;
    }
    // aminmax has no bf16/fp16 CPU kernel in LibTorch 1.13; min/max of those values are exact
    // in fp32 and convert back without rounding.
    const bool reduced = x.scalar_type() != at::kFloat;
    const at::Tensor rows = reduced ? l.rows.to(at::kFloat) : l.rows;
    at::Tensor mn, mx;
    if (rows.size(0) == 1 && rows.device().is_cpu())
        std::tie(mn, mx) = tensorRangeOnCpu(rows);
    if (!mn.defined())
        std::tie(mn, mx) = at::aminmax(rows, 1);
    r.min = mn.reshape(l.paramShape).to(x.scalar_type());
    r.max = mx.reshape(l.paramShape).to(x.scalar_type());
    return r;
}

QuantParams computeParams(const QuantSpec& spec, const Range& range) {
    checkSpec(spec);
    switch (traits(spec.dtype).kernel) {
    case Kernel::IntAffine:
        return intParams(spec, range);
    case Kernel::MiniFloat:
        return spec.granularity == Granularity::PerGroup ? blockParams(spec, range)
                                                         : floatParams(spec, range);
    case Kernel::MxBlock:
    case Kernel::NvFp4:
        return blockParams(spec, range);
    case Kernel::Mx6:
    case Kernel::Bfp16:
    case Kernel::Cast:
        return {};
    }
    return {};
}

at::Tensor fakeQuantize(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params) {
    checkInput(x, "fakeQuantize");
    checkSpec(spec);
    const TypeTraits& t = traits(spec.dtype);
    if (t.kernel == Kernel::Cast)
        return x.to(spec.dtype == DataType::BFloat16 ? at::kBFloat16 : at::kHalf)
            .to(x.scalar_type());
    if (x.numel() == 0)
        return x.clone();
    const RowLayout l = makeRows(x, spec);
    at::Tensor out;
    switch (t.kernel) {
    case Kernel::IntAffine:
        out = intFake(l, spec, params);
        break;
    case Kernel::MiniFloat:
        out = spec.granularity == Granularity::PerGroup ? blockFake(l, spec, params)
                                                        : floatFake(l, spec, params);
        break;
    case Kernel::MxBlock:
    case Kernel::NvFp4:
        out = blockFake(l, spec, params);
        break;
    case Kernel::Mx6:
        out = mx6Fake(l);
        break;
    case Kernel::Bfp16:
        out = bfp16Fake(l);
        break;
    case Kernel::Cast:
        break;
    }
    return finish(l, out, x).to(x.scalar_type());
}

at::Tensor fakeQuantize(const at::Tensor& x, const QuantSpec& spec) {
    checkInput(x, "fakeQuantize");
    checkSpec(spec);
    if (fastPathApplies(x, spec))
        return fakeQuantizeFast(x, spec).fake;
    const Kernel k = traits(spec.dtype).kernel;
    if (k == Kernel::Cast || k == Kernel::Mx6 || k == Kernel::Bfp16 || x.numel() == 0)
        return fakeQuantize(x, spec, QuantParams{});
    auto observer = Observer::create(spec);
    observer->observe(x);
    return fakeQuantize(x, spec, observer->params());
}

QuantizedTensor quantize(const at::Tensor& x, const QuantSpec& spec, const QuantParams& params) {
    checkInput(x, "quantize");
    checkSpec(spec);
    const TypeTraits& t = traits(spec.dtype);
    QuantizedTensor q;
    q.dtype = spec.dtype;
    q.params = params;
    if (t.kernel == Kernel::Cast) {
        q.codes = x.to(spec.dtype == DataType::BFloat16 ? at::kBFloat16 : at::kHalf);
        return q;
    }
    if (t.kernel == Kernel::Mx6 || t.kernel == Kernel::Bfp16)
        throw Error("quantize", "dtype",
                    dataTypeName(spec.dtype) + " supports fake quantization only (Quark cannot "
                                               "export it either)");
    const RowLayout l = makeRows(x, spec);
    at::Tensor codes;
    if (t.kernel == Kernel::IntAffine)
        codes = intCodes(l, spec, params);
    else if (t.kernel == Kernel::MiniFloat && spec.granularity != Granularity::PerGroup)
        codes = floatCodes(l, spec, params);
    else
        codes = blockCodes(l, spec, params);
    q.codes = finish(l, codes, x);
    return q;
}

QuantizedTensor quantize(const at::Tensor& x, const QuantSpec& spec) {
    checkInput(x, "quantize");
    const Kernel k = traits(spec.dtype).kernel;
    if (k == Kernel::Cast)
        return quantize(x, spec, QuantParams{});
    auto observer = Observer::create(spec);
    observer->observe(x);
    return quantize(x, spec, observer->params());
}

at::Tensor dequantize(const QuantizedTensor& q, const QuantSpec& spec, at::ScalarType dtype) {
    checkSpec(spec);
    if (q.dtype != spec.dtype)
        throw Error("dequantize", "dtype",
                    "codes are " + dataTypeName(q.dtype) + " but the spec says " +
                        dataTypeName(spec.dtype));
    const TypeTraits& t = traits(spec.dtype);
    if (t.kernel == Kernel::Cast)
        return q.codes.to(dtype);
    const RowLayout l = makeRows(q.codes, spec);
    at::Tensor out;
    if (t.kernel == Kernel::IntAffine)
        out = intDequant(l, spec, q.params);
    else if (t.kernel == Kernel::MiniFloat && spec.granularity != Granularity::PerGroup)
        out = floatDequant(l, spec, q.params);
    else
        out = blockDequant(l, spec, q.params);
    return finish(l, out, q.codes).to(dtype);
}

at::Tensor fakeQuantizeProgressive(const at::Tensor& x, const QuantSpec& first,
                                   const QuantSpec& second) {
    checkInput(x, "fakeQuantizeProgressive");
    checkSpec(first);
    checkSpec(second);
    const Kernel k = traits(first.dtype).kernel;
    if (!(k == Kernel::MiniFloat || (k == Kernel::IntAffine && first.symmetric)))
        throw Error("fakeQuantizeProgressive", "dtype",
                    "the first stage must be a minifloat or a symmetric integer spec");
    const QuantizedTensor q1 = quantize(x, first);
    // The first stage's values on its own grid (x / s1 rounded): dequantize with unit scales.
    QuantizedTensor unit = q1;
    unit.params.scale = at::ones(q1.params.scale.sizes(), at::kFloat);
    const at::Tensor grid = dequantize(unit, first, x.scalar_type());
    const at::Tensor y = fakeQuantize(grid, second).to(at::kFloat);
    // Undo the first scale in fp32, as Quark's reverse dequantization does.
    const RowLayout l = makeRows(y, first);
    const at::Tensor s = asColumn(q1.params.scale.to(at::kFloat), l.rows.size(0));
    return finish(l, l.rows * s, y).to(x.scalar_type());
}

} // namespace qs::quant
