#include "calib/BlockQuantHook.h"

namespace qs {

BlockQuantHook::BlockQuantHook(std::vector<LayerPlan>& plans, PlanFilter filter) {
    for (LayerPlan& p : plans) {
        if (!p.quantized())
            continue;
        m_plans[p.name] = &p;
        m_parts[p.name] = filter ? filter(p) : PlanParts{};
    }
}

LayerPlan* BlockQuantHook::find(const std::string& name) const {
    auto it = m_plans.find(name);
    return it == m_plans.end() ? nullptr : it->second;
}

at::Tensor BlockQuantHook::onInput(const LinearLayer& layer, const at::Tensor& input) {
    if (m_capture)
        m_inputs[layer.name] = input;
    if (m_collector)
        (*m_collector)[layer.name].push_back(input.reshape({-1, input.size(-1)}));
    LayerPlan* p = find(layer.name);
    if (!p || m_mode == Mode::Reference)
        return input;
    if (m_mode == Mode::Observe) {
        if (p->input)
            p->input->observe(input);
        return input;
    }
    return m_parts.at(layer.name).weightAndInput ? p->quantizeInput(input) : input;
}

at::Tensor BlockQuantHook::onOutput(const LinearLayer& layer, const at::Tensor& /*input*/,
                                    const at::Tensor& output) {
    LayerPlan* p = find(layer.name);
    at::Tensor out = output;
    if (p && m_mode == Mode::Observe && p->output)
        p->output->observe(output);
    else if (p && m_mode == Mode::Apply && m_parts.at(layer.name).output)
        out = p->quantizeOutput(output);
    if (m_capture)
        m_outputs[layer.name] = out;
    return out;
}

} // namespace qs
