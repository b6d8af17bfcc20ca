#pragma once

#include "quant/Observer.h"
#include "quant/QuantSpec.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

namespace qs {

// One activation quantizer of a linear (its input, or its output for KV caches). A static spec
// observes calibration data, then freezes its parameters; a dynamic spec computes its range on
// every call. apply() is the one numeric definition used for calibration, analysis, evaluation
// and export: the fused CPU kernel where it applies (bit-identical to the ATen path by
// construction, tests/core/quant/tst_quant_fused.cpp), the ATen path everywhere else.
class ActivationQuantizer {
public:
    ActivationQuantizer(std::string layer, quant::QuantSpec spec);

    const quant::QuantSpec& spec() const { return m_spec; }
    bool isStatic() const { return !m_spec.isDynamic; }
    bool isFrozen() const { return m_frozen; }
    bool needsObservation() const { return isStatic() && !m_frozen; }

    void observe(const at::Tensor& x);
    // Static quantizers take their parameters from what they observed; throws qs::Error naming
    // the layer when nothing was observed.
    void freeze();
    // Static quantizers: freezes with parameters calibrated earlier (a stored export's
    // input_scale), observing nothing.
    void freezeWith(quant::QuantParams params);
    // Frozen parameters (static specs only; empty before freeze()).
    const quant::QuantParams& params() const { return m_params; }
    // The observer of a static quantizer before freeze() (a distributed run merges the ranks'
    // observations into it); null for dynamic specs and once frozen with stored parameters.
    quant::Observer* observer() { return m_observer.get(); }

    at::Tensor apply(const at::Tensor& x) const;

private:
    std::string m_layer;
    quant::QuantSpec m_spec;
    std::unique_ptr<quant::Observer> m_observer;
    quant::QuantParams m_params;
    bool m_frozen = false;
};

} // namespace qs
