#include "calib/LayerPlan.h"

#include "quant/FastGroupQuant.h"
#include "quant/TypeTraits.h"

#include <ATen/ATen.h>

namespace qs {

namespace {

// Formats that exist only as fake quantization have no codes to keep.
bool hasCodes(const quant::QuantScheme& s) {
    const quant::Kernel k = quant::traits(s.weight.dtype).kernel;
    return !s.weightPreStage && k != quant::Kernel::Mx6 && k != quant::Kernel::Bfp16;
}

} // namespace

void LayerPlan::keepRoundToNearest() {
    WeightBaseline b = std::move(baseline);
    baseline = {};
    if (!scheme || !b.weight.defined() || !weight.reference.defined())
        return;
    LayerPlan rounded;
    rounded.scheme = scheme;
    rounded.quantizeWeight(b.weight);
    // Onto the current inputs and outputs: the scales the scaling algorithms moved since, as
    // applyScales computes them (float32, stored in the weight's dtype).
    const auto toCurrent = [&](const at::Tensor& w) {
        if (!b.inputScale.defined() && !b.outputScale.defined())
            return w;
        at::Tensor f = w.to(at::kFloat);
        if (b.inputScale.defined())
            f = f * b.inputScale.to(f.device(), at::kFloat).view({1, -1});
        if (b.outputScale.defined())
            f = f / b.outputScale.to(f.device(), at::kFloat).view({-1, 1});
        return f.to(w.scalar_type());
    };
    weight.roundToNearest = toCurrent(rounded.weight.dequantized);
    // GPTQ alone leaves the reference as it took it: nothing else to compare against.
    if (!b.weight.is_same(weight.reference))
        weight.beforeAlgorithm = toCurrent(b.weight);
}

void LayerPlan::quantizeWeight(const at::Tensor& w) {
    weight.reference = w;
    weight.codes.reset();
    if (!scheme || (stored && stored->weight)) {
        weight.dequantized = w;
        return;
    }
    const quant::QuantScheme& s = *scheme;
    if (s.weightPreStage) {
        weight.dequantized = quant::fakeQuantizeProgressive(w, *s.weightPreStage, s.weight);
        return;
    }
    if (quant::fastPathApplies(w, s.weight)) {
        // One fused pass gives the fake-quantized weight and its codes (FastGroupQuant.h).
        quant::FastQuantResult r = quant::fakeQuantizeFast(w, s.weight, /*wantCodes=*/true);
        weight.dequantized = r.fake;
        weight.codes =
            quant::QuantizedTensor{s.weight.dtype, r.codes, {r.scale, r.zeroPoint, {}, {}}};
        return;
    }
    // Statistics once; the fake-quantized weight and the codes from the same parameters.
    // fakeQuantize rather than dequantize(codes): for bf16/fp16 FP8 Quark's fake quantization
    // rounds in the input dtype, and the forward must match Quark's.
    auto observer = quant::Observer::create(s.weight);
    observer->observe(w);
    const quant::QuantParams params = observer->params();
    weight.dequantized = quant::fakeQuantize(w, s.weight, params);
    if (hasCodes(s))
        weight.codes = quant::quantize(w, s.weight, params);
}

bool LayerPlan::releaseFloatWeights() {
    if (!scheme || !weight.codes)
        return false;
    weight.reference = at::Tensor();
    weight.dequantized = at::Tensor();
    at::Tensor& codes = weight.codes->codes;
    const quant::TypeTraits& t = quant::traits(weight.codes->dtype);
    // Integer codes lie in [qmin, qmax]; both 8-bit ranges hold every int4/uint4/int8/uint8 code.
    if (t.encoding == quant::Encoding::Int && !codes.is_floating_point() && t.qmin >= -128 &&
        t.qmax <= 255 && codes.element_size() > 1)
        codes = codes.to(t.qmin < 0 ? at::kChar : at::kByte);
    return true;
}

void LayerPlan::createActivationQuantizers() {
    input.reset();
    output.reset();
    if (scheme && scheme->input)
        input.emplace(name, *scheme->input);
    if (outputSpec)
        output.emplace(name, *outputSpec);
    if (stored && stored->input && input && input->isStatic())
        input->freezeWith(*stored->input);
    if (stored && stored->output && output && output->isStatic())
        output->freezeWith(*stored->output);
}

void LayerPlan::freeze() {
    if (input)
        input->freeze();
    if (output)
        output->freeze();
}

} // namespace qs
