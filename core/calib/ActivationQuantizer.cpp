#include "calib/ActivationQuantizer.h"

#include "quant/FastGroupQuant.h"
#include "quant/Quantize.h"
#include "util/Error.h"

namespace qs {

ActivationQuantizer::ActivationQuantizer(std::string layer, quant::QuantSpec spec)
    : m_layer(std::move(layer)), m_spec(std::move(spec)) {
    if (isStatic())
        m_observer = quant::Observer::create(m_spec);
}

void ActivationQuantizer::observe(const at::Tensor& x) {
    if (m_observer && !m_frozen)
        m_observer->observe(x);
}

void ActivationQuantizer::freeze() {
    if (!isStatic() || m_frozen)
        return;
    if (!m_observer->hasObserved())
        throw Error(m_layer, "calibration",
                    m_layer.find(".experts.") != std::string::npos
                        ? "static quantizer saw no calibration data: the router sent no "
                          "calibration token to this expert (calibrate on more data, give the "
                          "experts a dynamic activation scheme, or exclude them)"
                        : "static quantizer saw no calibration data");
    m_params = m_observer->params();
    m_frozen = true;
    m_observer.reset(); // its statistics are in the parameters now
}

void ActivationQuantizer::freezeWith(quant::QuantParams params) {
    if (!isStatic())
        throw Error(m_layer, "input_tensors", "a dynamic quantizer takes no stored parameters");
    m_params = std::move(params);
    m_frozen = true;
    m_observer.reset();
}

at::Tensor ActivationQuantizer::apply(const at::Tensor& x) const {
    if (m_spec.isDynamic)
        return quant::fakeQuantize(x, m_spec);
    if (!m_frozen)
        throw Error(m_layer, "calibration", "static quantizer used before calibration");
    if (quant::fastParamsPathApplies(x, m_spec, m_params))
        return quant::fakeQuantizeFastWithParams(x, m_spec, m_params);
    return quant::fakeQuantize(x, m_spec, m_params);
}

} // namespace qs
