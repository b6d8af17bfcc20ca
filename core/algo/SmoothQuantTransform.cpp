#include "algo/SmoothQuantTransform.h"

#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <cstdio>

namespace qs::algo {

SmoothQuantTransform::SmoothQuantTransform(const nlohmann::json& params, const std::string& source)
    : m_params(params), m_source(source) {
    // The catalog has validated names, types and ranges and holds the defaults
    // (AlgorithmCatalog.cpp).
    m_alpha = algorithmParam("smoothquant", params, "alpha").get<double>();
    m_clampMin = algorithmParam("smoothquant", params, "scale_clamp_min").get<double>();
}

void SmoothQuantTransform::checkModel(const ModelConfig& config) const {
    scalingTemplateFor(config, m_params, m_source, "smoothquant");
}

at::Tensor SmoothQuantTransform::smoothScales(const at::Tensor& actAbsMax,
                                              const std::vector<at::Tensor>& weights, double alpha,
                                              double clampMin) {
    at::Tensor wmax;
    for (const at::Tensor& w : weights) {
        const at::Tensor m = std::get<0>(w.to(at::kFloat).abs().max(0));
        wmax = wmax.defined() ? at::maximum(wmax, m) : m;
    }
    wmax = wmax.clamp_min(1e-5);
    const at::Tensor x = actAbsMax.to(at::kFloat).to(wmax.device());
    return (x.pow(alpha) / wmax.pow(1.0 - alpha)).clamp_min(clampMin);
}

void SmoothQuantTransform::apply(BlockTransformInput& input) {
    const ScalingTemplate tmpl =
        scalingTemplateFor(*input.config, m_params, m_source, "smoothquant");
    std::vector<ResolvedScalingGroup> groups = resolveScalingGroups(
        input.block, input.plans, tmpl, *input.config, m_source, "smoothquant");
    std::vector<at::Tensor> scales;
    for (const ResolvedScalingGroup& g : groups) {
        const at::Tensor xmax =
            channelAbsMax(capturedInputs(input.inputs, g.inp->name, "SmoothQuant"));
        std::vector<at::Tensor> weights;
        for (const LinearLayer* l : g.layers)
            weights.push_back(l->weight);
        scales.push_back(constrainScales(g, smoothScales(xmax, weights, m_alpha, m_clampMin)));
    }
    char record[96];
    std::snprintf(record, sizeof record, "smoothquant(alpha=%g, scale_clamp_min=%g)", m_alpha,
                  m_clampMin);
    for (size_t i = 0; i < groups.size(); ++i) {
        applyScales(groups[i], scales[i]);
        recordTransform(groups[i], record);
    }
}

} // namespace qs::algo
