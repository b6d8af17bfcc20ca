#include "algo/GptqTransform.h"

#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::algo {

GptqTransform::GptqTransform(const nlohmann::json& params, const std::string& source)
    : m_source(source) {
    // The catalog has validated names, types and ranges (AlgorithmCatalog.cpp).
    m_options.dampPercent = params.value("damp_percent", 0.01);
    m_options.blockSize = params.value("block_size", int64_t(128));
    m_options.descAct = params.value("desc_act", true);
    m_options.staticGroups = params.value("static_groups", true);
    if (params.contains("inside_layer_modules") && params["inside_layer_modules"].is_array())
        for (const auto& m : params["inside_layer_modules"])
            m_modules.push_back(m.get<std::string>());
}

bool GptqTransform::covers(const std::string& layer) const {
    if (m_modules.empty())
        return true;
    for (const std::string& m : m_modules)
        if (layer.size() >= m.size() && layer.compare(layer.size() - m.size(), m.size(), m) == 0 &&
            (layer.size() == m.size() || layer[layer.size() - m.size() - 1] == '.'))
            return true;
    return false;
}

void GptqTransform::checkLayer(const std::string& layer, const quant::QuantScheme& scheme) const {
    if (covers(layer) && !scheme.weightPreStage)
        checkGptqSpec(scheme.weight, layer);
}

void GptqTransform::apply(BlockTransformInput& input) {
    const std::vector<LinearLayer*> linears = input.block.linears();
    const size_t layers = input.plans.size();
    for (size_t k = 0; k < layers; ++k) {
        LayerPlan& plan = input.plans[k];
        if (!plan.scheme || plan.scheme->weightPreStage || !covers(plan.name))
            continue;
        // Progress per layer and per block of columns: where a cancelled run stops.
        const auto report = [&](double within) {
            if (input.report)
                input.report((double(k) + within) / double(layers), plan.name);
        };
        report(0.0);
        const LinearLayer* linear = nullptr;
        for (const LinearLayer* l : linears)
            if (l->name == plan.name)
                linear = l;
        if (!linear)
            throw Error(m_source, "algorithms.gptq",
                        "no linear named " + plan.name + " in its block");
        const auto found = input.inputs.find(plan.name);
        if (found == input.inputs.end())
            throw Error(m_source, "algorithms.gptq",
                        "no calibration inputs were captured for " + plan.name);
        const at::Tensor& w = linear->weight;
        const at::Tensor h = gptqHessian(found->second, w.size(1), plan.name);
        const GptqResult r = gptqQuantize(w, h, plan.scheme->weight, m_options, plan.name, report);
        plan.weight.reference = w;
        plan.weight.dequantized = r.dequantized.to(w.scalar_type());
        plan.weight.codes = r.codes;
        plan.transforms.push_back(name());
    }
}

} // namespace qs::algo
