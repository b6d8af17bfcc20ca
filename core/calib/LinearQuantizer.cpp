#include "calib/LinearQuantizer.h"

#include "quant/Quantize.h"
#include "util/Error.h"

namespace qs {

namespace {

bool isStatic(const quant::QuantSpec& s) {
    return !s.isDynamic;
}

} // namespace

LinearQuantizer::LinearQuantizer(std::string name, std::optional<quant::QuantScheme> scheme,
                                 std::optional<quant::QuantSpec> outputSpec)
    : m_name(std::move(name)), m_scheme(std::move(scheme)) {
    // An explicit KV-cache spec wins over the scheme's own output spec (Quark's kv_cache config
    // overrides the layer's output_tensors on k_proj/v_proj).
    m_output = outputSpec ? outputSpec : (m_scheme ? m_scheme->output : std::nullopt);
    auto make = [](const quant::QuantSpec& spec) {
        auto q = std::make_unique<ActivationQuantizer>();
        q->spec = spec;
        if (isStatic(spec))
            q->observer = quant::Observer::create(spec);
        return q;
    };
    if (m_scheme && m_scheme->input)
        m_inputQ = make(*m_scheme->input);
    if (m_output)
        m_outputQ = make(*m_output);
}

void LinearQuantizer::quantizeWeight(const LinearLayer& layer) {
    m_referenceWeight = layer.weight;
    if (!m_scheme) {
        m_quantizedWeight = layer.weight;
        return;
    }
    const quant::QuantScheme& s = *m_scheme;
    if (s.weightPreStage) {
        m_quantizedWeight =
            quant::fakeQuantizeProgressive(layer.weight, *s.weightPreStage, s.weight);
    } else if (s.weight.observer == quant::ObserverKind::MinMax) {
        m_quantizedWeight = quant::fakeQuantize(layer.weight, s.weight);
    } else {
        auto observer = quant::Observer::create(s.weight);
        observer->observe(layer.weight);
        m_quantizedWeight = quant::fakeQuantize(layer.weight, s.weight, observer->params());
    }
}

bool LinearQuantizer::needsObservation() const {
    return (m_inputQ && m_inputQ->observer && !m_inputQ->frozen) ||
           (m_outputQ && m_outputQ->observer && !m_outputQ->frozen);
}

void LinearQuantizer::observeInput(const at::Tensor& x) {
    if (m_inputQ && m_inputQ->observer)
        m_inputQ->observer->observe(x);
}

void LinearQuantizer::observeOutput(const at::Tensor& y) {
    if (m_outputQ && m_outputQ->observer)
        m_outputQ->observer->observe(y);
}

void LinearQuantizer::freeze() {
    for (ActivationQuantizer* q : {m_inputQ.get(), m_outputQ.get()}) {
        if (!q || !q->observer || q->frozen)
            continue;
        if (!q->observer->hasObserved())
            throw Error(m_name, "calibration", "static quantizer saw no calibration data");
        q->params = q->observer->params();
        q->frozen = true;
    }
}

at::Tensor LinearQuantizer::ActivationQuantizer::apply(const at::Tensor& x,
                                                       const std::string& layer) const {
    if (spec.isDynamic)
        return quant::fakeQuantize(x, spec);
    if (!frozen)
        throw Error(layer, "calibration", "static quantizer used before calibration");
    return quant::fakeQuantize(x, spec, params);
}

at::Tensor LinearQuantizer::quantizeInput(const at::Tensor& x) const {
    return m_inputQ ? m_inputQ->apply(x, m_name) : x;
}

at::Tensor LinearQuantizer::quantizeOutput(const at::Tensor& y) const {
    return m_outputQ ? m_outputQ->apply(y, m_name) : y;
}

} // namespace qs
