#include "algo/AutoSmoothQuantTransform.h"

#include "algo/AwqTransform.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <limits>

namespace qs::algo {

AutoSmoothQuantTransform::AutoSmoothQuantTransform(const nlohmann::json& params,
                                                   const std::string& source)
    : m_params(params), m_source(source) {
    // The catalog has validated the choices and holds the default (AlgorithmCatalog.cpp).
    if (algorithmParam("autosmoothquant", params, "compute_scale_loss").get<std::string>() == "MAE")
        m_loss = ScaleLoss::Mae;
}

void AutoSmoothQuantTransform::checkModel(const ModelConfig& config) const {
    scalingTemplateFor(config, m_params, m_source, "autosmoothquant");
}

void AutoSmoothQuantTransform::apply(BlockTransformInput& input) {
    const ScalingTemplate tmpl =
        scalingTemplateFor(*input.config, m_params, m_source, "autosmoothquant");
    std::vector<ResolvedScalingGroup> groups = resolveScalingGroups(
        input.block, input.plans, tmpl, *input.config, m_source, "autosmoothquant");
    std::vector<at::Tensor> scales(groups.size());
    std::vector<double> ratios(groups.size(), 0.0);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        if (input.report)
            input.report(double(gi) / double(groups.size()), "scale search");
        const ResolvedScalingGroup& g = groups[gi];
        const LayerPlan* inpPlan = nullptr;
        for (size_t k = 0; k < g.layers.size(); ++k)
            if (g.layers[k] == g.inp)
                inpPlan = g.plans[k];
        if (!inpPlan || !inpPlan->scheme) // as AWQ: only quantized linears are searched
            continue;
        const at::Tensor xmax =
            channelAbsMax(capturedInputs(input.inputs, g.inp->name, "AutoSmoothQuant"));
        GroupOutputProbe probe(input, g);
        double best = std::numeric_limits<double>::infinity();
        for (int i = 0; i < m_grid; ++i) {
            const double ratio = double(i) / double(m_grid);
            const at::Tensor s = constrainScales(g, AwqTransform::candidateScales(xmax, ratio));
            const double loss = probe.loss(s, /*quantizeInputs=*/true, m_loss);
            if (loss < best) { // strict: ties keep the smaller ratio (Quark's argmin)
                best = loss;
                scales[gi] = s;
                ratios[gi] = ratio;
            }
        }
        if (!scales[gi].defined())
            throw Error(g.inspect->name, "autosmoothquant",
                        "every candidate scale gave a non-finite output error");
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        if (!scales[gi].defined())
            continue;
        applyScales(groups[gi], scales[gi]);
        char record[80];
        std::snprintf(record, sizeof record, "autosmoothquant(ratio=%g, loss=%s)", ratios[gi],
                      m_loss == ScaleLoss::Mae ? "MAE" : "MSE");
        recordTransform(groups[gi], record);
    }
}

} // namespace qs::algo
