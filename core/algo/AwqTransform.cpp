#include "algo/AwqTransform.h"

#include "algo/GroupOutputProbe.h"
#include "quant/QuantSpec.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <limits>

namespace qs::algo {

AwqTransform::AwqTransform(const nlohmann::json& params, const std::string& source,
                           AwqOptions options)
    : m_params(params), m_source(source), m_options(options) {}

void AwqTransform::checkModel(const ModelConfig& config) const {
    scalingTemplateFor(config, m_params, m_source, "awq");
}

at::Tensor AwqTransform::candidateScales(const at::Tensor& actStat, double ratio) {
    at::Tensor s = actStat.to(at::kFloat).pow(ratio).clamp_min(1e-4);
    return s / (s.max() * s.min()).sqrt();
}

AwqTransform::Choice AwqTransform::searchScales(BlockTransformInput& input,
                                                const ResolvedScalingGroup& group,
                                                const std::function<void(double)>& progress) const {
    const at::Tensor xmean = channelAbsMean(capturedInputs(input.inputs, group.inp->name, "AWQ"));
    GroupOutputProbe probe(input, group);
    Choice best;
    best.loss = std::numeric_limits<double>::infinity();
    for (int i = 0; i < m_options.grid; ++i) {
        const double ratio = double(i) / double(m_options.grid);
        // Under grouped-query attention (v_proj -> o_proj) the candidates are measured as
        // they are, over all of o_proj's input channels, and the chosen one is constrained
        // only when applied (the maximum over the query heads sharing a kv head): Quark's
        // order (awq.py searches, scale.py scale_fc_fc reduces). Measuring the constrained
        // candidates instead gave uint4_wo_32 6.072780 and int4_wo_32 6.159103 on
        // stories260K, against 6.032663 and 6.155434 this way (docs/algorithms.md).
        const at::Tensor s = candidateScales(xmean, ratio);
        // Each grid point runs the measured module over the calibration batches: a
        // cancelled run stops before the next one.
        if (progress)
            progress(double(i) / double(m_options.grid));
        const double loss = probe.loss(s, /*quantizeInputs=*/false);
        if (loss < best.loss) { // strict: ties keep the smaller ratio
            best.loss = loss;
            best.ratio = ratio;
            best.scales = s;
        }
    }
    if (!best.scales.defined())
        throw Error(group.inspect->name, "awq",
                    "every candidate scale gave a non-finite output error (NaN or Inf in the "
                    "calibration outputs?)");
    return best;
}

namespace {

// Weight schemes whose quantization groups lie within one row: clipping a row's groups does
// not move another row's grid, so rows can be searched in batches.
bool rowLocal(const quant::QuantSpec& s) {
    if (s.granularity == quant::Granularity::PerChannel)
        return s.chAxis == 0;
    if (s.granularity == quant::Granularity::PerGroup)
        return s.chAxis == -1 || s.chAxis == 1;
    return false;
}

} // namespace

at::Tensor AwqTransform::clipWeight(const LayerPlan& plan, const at::Tensor& weight,
                                    const at::Tensor& inputs) const {
    const quant::QuantSpec& spec = plan.scheme->weight;
    const int64_t out = weight.size(0), in = weight.size(1);
    const int64_t gs = spec.granularity == quant::Granularity::PerGroup ? spec.groupSize : in;
    if (gs <= 0 || in % gs != 0)
        return weight;
    const int64_t ng = in / gs;
    // Up to clipTokens tokens, every step-th (Quark's input_feat[:, 0::step]).
    const int64_t n = inputs.size(0);
    const int64_t step = std::max<int64_t>(1, n / std::min(n, m_options.clipTokens));
    const at::Tensor x = inputs.to(at::kFloat).slice(0, 0, n, step);
    const at::Tensor xg = x.reshape({x.size(0), ng, gs}).permute({1, 0, 2}).contiguous();
    const at::Tensor w = weight.to(at::kFloat);
    std::vector<at::Tensor> clipped;
    const int64_t batch = 256; // output channels per step (memory: ng x tokens x batch)
    const int steps = int(m_options.maxShrink * m_options.clipGrid);
    for (int64_t r = 0; r < out; r += batch) {
        const int64_t b = std::min(batch, out - r);
        const at::Tensor wb = w.narrow(0, r, b).reshape({b, ng, gs});
        const at::Tensor reference = at::bmm(xg, wb.permute({1, 2, 0})); // [ng, tokens, b]
        const at::Tensor orgMax = std::get<0>(wb.abs().max(-1));         // [b, ng]
        at::Tensor bestMax = orgMax.clone();
        at::Tensor minErr = at::full_like(orgMax, std::numeric_limits<float>::infinity());
        for (int i = 0; i < steps; ++i) {
            const at::Tensor maxVal =
                (orgMax * (1.0 - double(i) / m_options.clipGrid)).unsqueeze(-1);
            const at::Tensor cur = at::minimum(at::maximum(wb, -maxVal), maxVal).reshape({b, in});
            const at::Tensor q = GroupOutputProbe::quantizeWeight(&plan, cur).reshape({b, ng, gs});
            const at::Tensor y = at::bmm(xg, q.permute({1, 2, 0}));
            const at::Tensor err = (y - reference).pow(2).mean(1).t(); // [b, ng]
            const at::Tensor better = err < minErr;
            minErr = at::where(better, err, minErr);
            bestMax = at::where(better, maxVal.squeeze(-1), bestMax);
        }
        const at::Tensor lim = bestMax.unsqueeze(-1);
        clipped.push_back(at::minimum(at::maximum(wb, -lim), lim).reshape({b, in}));
    }
    return at::cat(clipped, 0).to(weight.scalar_type());
}

void AwqTransform::apply(BlockTransformInput& input) {
    const ScalingTemplate tmpl = scalingTemplateFor(*input.config, m_params, m_source, "awq");
    std::vector<ResolvedScalingGroup> groups =
        resolveScalingGroups(input.block, input.plans, tmpl, *input.config, m_source, "awq");
    // 1. Scales of every group from the block as loaded (as Quark and AutoAWQ).
    std::vector<Choice> choices(groups.size());
    for (size_t i = 0; i < groups.size(); ++i) {
        const ResolvedScalingGroup& g = groups[i];
        // `within` is the fraction of the grid done, which is the ratio about to be measured.
        const auto report = [&](double within) {
            if (!input.report)
                return;
            char ratio[32];
            std::snprintf(ratio, sizeof ratio, " (ratio %g)", within);
            input.report((double(i) + within) / double(groups.size() + 1),
                         "scale search " + g.inp->name + ratio);
        };
        const LayerPlan* inpPlan = nullptr;
        for (size_t k = 0; k < g.layers.size(); ++k)
            if (g.layers[k] == g.inp)
                inpPlan = g.plans[k];
        // Quark captures only quantized linears' inputs: a group whose inp is not quantized
        // (an excluded down_proj) is not scaled.
        if (!inpPlan || !inpPlan->scheme)
            continue;
        choices[i] = searchScales(input, g, report);
    }
    // 2. Apply them; remember each linear's input scales for the clip search.
    std::map<const LinearLayer*, at::Tensor> inputScales;
    for (size_t i = 0; i < groups.size(); ++i) {
        if (!choices[i].scales.defined())
            continue;
        const at::Tensor applied = constrainScales(groups[i], choices[i].scales);
        applyScales(groups[i], applied);
        char record[64];
        std::snprintf(record, sizeof record, "awq(ratio=%g)", choices[i].ratio);
        recordTransform(groups[i], record);
        for (const LinearLayer* l : groups[i].layers)
            inputScales[l] = applied; // what the layer's inputs are now divided by
    }
    // 3. Clip search on the rescaled weights.
    if (!m_options.clip)
        return;
    if (input.report)
        input.report(double(groups.size()) / double(groups.size() + 1), "clip search");
    const std::vector<LinearLayer*> linears = input.block.linears();
    for (size_t i = 0; i < linears.size(); ++i) {
        LinearLayer* l = linears[i];
        LayerPlan& plan = input.plans[i];
        if (!plan.scheme || plan.scheme->weightPreStage || !rowLocal(plan.scheme->weight) ||
            l->routed)
            continue;
        // Quark skips q and k: their outputs meet in q k^T, where a per-output error
        // estimate does not hold.
        if (l->kind.find("q_") != std::string::npos || l->kind.find("k_") != std::string::npos ||
            l->kind.find("query") != std::string::npos || l->kind.find("key") != std::string::npos)
            continue;
        const auto found = input.inputs.find(l->name);
        if (found == input.inputs.end() || found->second.empty())
            continue;
        if (input.report)
            input.report((double(groups.size()) + double(i) / double(linears.size())) /
                             double(groups.size() + 1),
                         "clip search " + l->name);
        at::Tensor x = at::cat(found->second, 0);
        const auto sc = inputScales.find(l);
        if (sc != inputScales.end())
            x = x / sc->second.to(x.device(), x.scalar_type());
        l->weight = clipWeight(plan, l->weight, x);
        if (plan.transforms.empty() || plan.transforms.back() != "awq-clip")
            plan.transforms.push_back("awq-clip");
    }
}

} // namespace qs::algo
