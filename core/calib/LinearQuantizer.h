#pragma once

#include "model/DecoderModel.h"
#include "quant/Observer.h"
#include "quant/QuantScheme.h"

#include <memory>
#include <optional>
#include <string>

namespace qs {

// The quantization state of one linear layer during calibration: its weight fake-quantized once,
// observers for static input/output quantizers, then frozen parameters. Dynamic specs compute
// their range on every call.
class LinearQuantizer {
public:
    LinearQuantizer(std::string name, std::optional<quant::QuantScheme> scheme,
                    std::optional<quant::QuantSpec> outputSpec);

    const std::string& name() const { return m_name; }
    bool quantized() const { return m_scheme.has_value() || m_output.has_value(); }
    const std::optional<quant::QuantScheme>& scheme() const { return m_scheme; }

    // Fake-quantizes `layer.weight` (kept aside as the reference) when the scheme has a weight
    // spec.
    void quantizeWeight(const LinearLayer& layer);
    const at::Tensor& referenceWeight() const { return m_referenceWeight; }
    const at::Tensor& quantizedWeight() const { return m_quantizedWeight; }

    bool needsObservation() const; // a static input or output quantizer waits for statistics
    void observeInput(const at::Tensor& x);
    void observeOutput(const at::Tensor& y);
    void freeze(); // static quantizers take their parameters from what they observed

    at::Tensor quantizeInput(const at::Tensor& x) const;  // identity without an input spec
    at::Tensor quantizeOutput(const at::Tensor& y) const; // identity without an output spec
    bool hasInputQuantizer() const { return m_scheme && m_scheme->input.has_value(); }

private:
    struct ActivationQuantizer {
        quant::QuantSpec spec;
        std::unique_ptr<quant::Observer> observer;
        quant::QuantParams params;
        bool frozen = false;
        at::Tensor apply(const at::Tensor& x, const std::string& layer) const;
    };

    std::string m_name;
    std::optional<quant::QuantScheme> m_scheme;
    std::optional<quant::QuantSpec> m_output;
    std::unique_ptr<ActivationQuantizer> m_inputQ, m_outputQ;
    at::Tensor m_referenceWeight, m_quantizedWeight;
};

} // namespace qs
