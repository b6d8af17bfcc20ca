#include "algo/GroupOutputProbe.h"
#include "eval/WindowShards.h"

#include "quant/Observer.h"
#include "quant/Quantize.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <optional>

namespace qs::algo {

namespace {

// Thrown by the hook once the inspected linear has produced its output: the rest of the block
// does not influence the measured output (Quark stops its forward the same way).
struct StopForward {};

class ProbeHook : public LinearHook {
public:
    const ResolvedScalingGroup* group = nullptr;
    at::Tensor scales; // undefined: the reference (nothing changed)
    // Per group layer: the input spec and its frozen parameters (AutoSmoothQuant), if any.
    std::vector<const quant::QuantSpec*> inputSpecs;
    std::vector<std::optional<quant::QuantParams>> inputParams;
    at::Tensor captured;

    at::Tensor onInput(const LinearLayer& layer, const at::Tensor& x) override {
        if (!scales.defined())
            return x;
        for (size_t i = 0; i < group->layers.size(); ++i) {
            if (&layer != group->layers[i])
                continue;
            at::Tensor y = x / scales.to(x.device(), x.scalar_type());
            if (i < inputSpecs.size() && inputSpecs[i])
                y = inputParams[i] ? quant::fakeQuantize(y, *inputSpecs[i], *inputParams[i])
                                   : quant::fakeQuantize(y, *inputSpecs[i]);
            return y;
        }
        return x;
    }

    at::Tensor onOutput(const LinearLayer& layer, const at::Tensor&,
                        const at::Tensor& output) override {
        if (&layer == group->inspect) {
            captured = output;
            throw StopForward{};
        }
        return output;
    }
};

// Puts candidate weights into the group's linears and restores the originals on destruction
// (also when a cancellation unwinds through the search).
class WeightSwap {
public:
    explicit WeightSwap(const ResolvedScalingGroup& g) : m_group(g) {
        for (const LinearLayer* l : g.layers)
            m_saved.push_back(l->weight);
    }
    ~WeightSwap() {
        for (size_t i = 0; i < m_saved.size(); ++i)
            m_group.layers[i]->weight = m_saved[i];
    }
    WeightSwap(const WeightSwap&) = delete;
    WeightSwap& operator=(const WeightSwap&) = delete;

private:
    const ResolvedScalingGroup& m_group;
    std::vector<at::Tensor> m_saved;
};

} // namespace

at::Tensor GroupOutputProbe::quantizeWeight(const LayerPlan* plan, const at::Tensor& w) {
    if (!plan || !plan->scheme)
        return w;
    const quant::QuantScheme& s = *plan->scheme;
    if (s.weightPreStage)
        return quant::fakeQuantizeProgressive(w, *s.weightPreStage, s.weight);
    return quant::fakeQuantize(w, s.weight);
}

GroupOutputProbe::GroupOutputProbe(BlockTransformInput& input, const ResolvedScalingGroup& group)
    : m_input(input), m_group(group) {
    const bool ownOutput = group.layers.size() == 1 && group.inspect == group.layers.front();
    if (!ownOutput && (!input.stream.defined() || !input.context))
        throw Error(group.inspect->name, "calibration",
                    "the scale search runs the block over calibration data; none was given");
    m_reference = run(at::Tensor(), false);
}

std::vector<at::Tensor> GroupOutputProbe::run(const at::Tensor& s, bool quantizeInputs) {
    ProbeHook hook;
    hook.group = &m_group;
    hook.scales = s;
    WeightSwap swap(m_group);
    if (s.defined()) {
        const at::Tensor sRow = s.view({1, -1});
        std::vector<at::Tensor> scaledInputs;
        if (quantizeInputs) {
            const std::vector<at::Tensor>& captured =
                capturedInputs(m_input.inputs, m_group.inp->name, "the scale search");
            for (const at::Tensor& x : captured)
                scaledInputs.push_back(x / s.to(x.device(), x.scalar_type()));
        }
        for (size_t i = 0; i < m_group.layers.size(); ++i) {
            LinearLayer* l = m_group.layers[i];
            const LayerPlan* plan = m_group.plans[i];
            const at::Tensor w = l->weight.to(at::kFloat) * sRow.to(l->weight.device());
            l->weight = quantizeWeight(plan, w).to(l->weight.scalar_type());
            const quant::QuantSpec* spec =
                quantizeInputs && plan && plan->scheme && plan->scheme->input
                    ? &*plan->scheme->input
                    : nullptr;
            hook.inputSpecs.push_back(spec);
            if (spec && !spec->isDynamic) {
                // A static quantizer's range: what it would observe on the smoothed inputs.
                auto observer = quant::Observer::create(*spec);
                for (const at::Tensor& x : scaledInputs)
                    observer->observe(x);
                hook.inputParams.push_back(observer->params());
            } else {
                hook.inputParams.push_back(std::nullopt);
            }
        }
    }
    std::vector<at::Tensor> out;
    if (m_group.layers.size() == 1 && m_group.inspect == m_group.layers.front()) {
        // The measured output is the layer's own: its captured inputs are exactly what the
        // block's forward would feed it (the capture pass ran the same batches), so the layer
        // alone runs on them, through the same hook, without the block around it.
        LinearLayer& layer = *m_group.layers.front();
        for (const at::Tensor& x : capturedInputs(m_input.inputs, layer.name, "the scale search")) {
            hook.captured = at::Tensor();
            try {
                const at::Tensor in = hook.onInput(layer, x);
                hook.onOutput(layer, in, at::linear(in, layer.weight, layer.bias));
            } catch (const StopForward&) {
            }
            out.push_back(hook.captured);
        }
        return out;
    }
    ForwardContext ctx = *m_input.context;
    ctx.hook = &hook;
    const at::Tensor& stream = m_input.stream;
    const int64_t rows = stream.size(0);
    const int64_t size = windowsPerBatch(m_input.maxBatchTokens, stream.size(1));
    for (int64_t b = 0; b < rows; b += size) {
        hook.captured = at::Tensor();
        try {
            m_input.block.forward(stream.narrow(0, b, std::min(size, rows - b)), ctx);
        } catch (const StopForward&) {
        }
        if (!hook.captured.defined())
            throw Error(m_group.inspect->name, "scaling_layers",
                        "the block's forward never reached this linear");
        out.push_back(hook.captured);
    }
    return out;
}

std::vector<at::Tensor> GroupOutputProbe::outputs(const at::Tensor& s, bool quantizeInputs) {
    return run(s, quantizeInputs);
}

double GroupOutputProbe::loss(const at::Tensor& s, bool quantizeInputs, ScaleLoss kind) {
    const std::vector<at::Tensor> out = run(s, quantizeInputs);
    double sum = 0.0;
    int64_t count = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const at::Tensor d = (m_reference[i].to(at::kFloat) - out[i].to(at::kFloat)).abs();
        sum += (kind == ScaleLoss::Mse ? d * d : d).sum(at::kDouble).item<double>();
        count += d.numel();
    }
    return sum / double(std::max<int64_t>(1, count));
}

} // namespace qs::algo
