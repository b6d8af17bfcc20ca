#include "calib/BlockQuantHook.h"

namespace qs {

LinearQuantizer* BlockQuantHook::find(const std::string& name) const {
    auto it = m_quantizers.find(name);
    return it == m_quantizers.end() ? nullptr : it->second;
}

at::Tensor BlockQuantHook::onInput(const LinearLayer& layer, const at::Tensor& input) {
    if (m_capture)
        m_inputs[layer.name] = input;
    LinearQuantizer* q = find(layer.name);
    if (!q || m_mode == Mode::Reference)
        return input;
    if (m_mode == Mode::Observe) {
        q->observeInput(input);
        return input;
    }
    return q->quantizeInput(input);
}

at::Tensor BlockQuantHook::onOutput(const LinearLayer& layer, const at::Tensor& input,
                                    const at::Tensor& output) {
    LinearQuantizer* q = find(layer.name);
    at::Tensor out = output;
    if (q && m_mode == Mode::Observe)
        q->observeOutput(output);
    else if (q && m_mode == Mode::Apply)
        out = q->quantizeOutput(output);
    if (m_capture)
        m_outputs[layer.name] = out;
    return out;
}

} // namespace qs
