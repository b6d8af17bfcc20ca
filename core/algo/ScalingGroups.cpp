#include "algo/ScalingGroups.h"

#include "model/ModelFamily.h"
#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::algo {

ScalingTemplate scalingTemplateFor(const ModelConfig& config, const nlohmann::json& params,
                                   const std::string& source, const std::string& field) {
    // The family's template also supplies moduleOutputs for a recipe's own groups, so a family
    // without one is refused either way.
    ScalingTemplate tmpl = familyFor(config.modelType, config.source).scalingTemplate(config);
    if (params.is_object() && params.contains("scaling_layers") &&
        !params["scaling_layers"].is_null()) {
        tmpl.groups =
            scalingGroupsFromJson(params["scaling_layers"], source, field + ".scaling_layers");
        for (size_t i = 0; i < tmpl.groups.size(); ++i) {
            const std::string& m = tmpl.groups[i].module2inspect;
            if (!m.empty() && !tmpl.moduleOutputs.count(m))
                throw Error(source,
                            field + ".scaling_layers[" + std::to_string(i) + "].module2inspect",
                            "'" + m + "' is not a module of a '" + config.modelType +
                                "' block whose output is known");
        }
    }
    return tmpl;
}

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0 &&
           s[s.size() - tail.size() - 1] == '.';
}

} // namespace

std::vector<ResolvedScalingGroup>
resolveScalingGroups(DecoderBlock& block, std::vector<LayerPlan>& plans,
                     const ScalingTemplate& tmpl, const ModelConfig& config,
                     const std::string& source, const std::string& field) {
    const std::vector<LinearLayer*> linears = block.linears();
    const std::vector<BlockNorm> norms = block.norms();
    // The block's prefix ("model.layers.3.") from the first template linear found in it.
    std::string prefix;
    for (const ScalingGroup& g : tmpl.groups)
        for (const std::string& rel : g.layers)
            for (const LinearLayer* l : linears)
                if (prefix.empty() && endsWith(l->name, rel))
                    prefix = l->name.substr(0, l->name.size() - rel.size());
    const std::string where = "block " + std::to_string(block.index());
    if (prefix.empty())
        throw Error(source, field,
                    where + " has none of the scaling template's linears (is the template for "
                            "this family?)");
    auto linear = [&](const std::string& rel, const std::string& f) -> LinearLayer* {
        for (LinearLayer* l : linears)
            if (l->name == prefix + rel)
                return l;
        throw Error(source, f, "no linear '" + prefix + rel + "' in " + where);
    };
    auto planOf = [&](const LinearLayer* l) -> LayerPlan* {
        for (size_t i = 0; i < linears.size(); ++i)
            if (linears[i] == l)
                return &plans[i];
        return nullptr;
    };

    std::vector<ResolvedScalingGroup> out;
    for (size_t gi = 0; gi < tmpl.groups.size(); ++gi) {
        const ScalingGroup& g = tmpl.groups[gi];
        const std::string f = field + ".scaling_layers[" + std::to_string(gi) + "]";
        ResolvedScalingGroup r;
        r.spec = g;
        r.prevName = prefix + g.prevOp;
        for (const std::string& rel : g.layers) {
            LinearLayer* l = linear(rel, f + ".layers");
            if (l->routed || !l->parts.empty())
                throw Error(source, f + ".layers",
                            l->name + " is a routed expert or a fused projection; it cannot be "
                                      "rescaled as one group");
            r.layers.push_back(l);
            r.plans.push_back(planOf(l));
        }
        r.inp = linear(g.inp, f + ".inp");
        if (g.module2inspect.empty()) {
            if (r.layers.size() != 1)
                throw Error(source, f + ".module2inspect",
                            "a group of several linears needs the module whose output to measure");
            r.inspect = r.layers.front();
        } else {
            r.inspect = linear(tmpl.moduleOutputs.at(g.module2inspect), f + ".module2inspect");
        }
        const int64_t width = r.layers.front()->weight.size(1);
        for (const LinearLayer* l : r.layers)
            if (l->weight.size(1) != width)
                throw Error(source, f + ".layers",
                            l->name + " has " + std::to_string(l->weight.size(1)) +
                                " inputs where the group's first linear has " +
                                std::to_string(width));
        for (const BlockNorm& n : norms)
            if (n.name == r.prevName)
                r.norm = n;
        int64_t prevWidth = 0;
        if (r.norm.weight) {
            prevWidth = r.norm.weight->size(0);
        } else {
            r.prevLinear = linear(g.prevOp, f + ".prev_op");
            r.prevPlan = planOf(r.prevLinear);
            prevWidth = r.prevLinear->weight.size(0);
        }
        if (prevWidth != width) {
            // v_proj -> o_proj under grouped-query attention: v has numKvHeads heads, o_proj's
            // input numHeads, query head h reading kv head h / (numHeads / numKvHeads).
            const bool gqa = r.prevLinear && config.numKvHeads > 0 &&
                             config.numHeads > config.numKvHeads &&
                             prevWidth == config.numKvHeads * config.headDim &&
                             width == config.numHeads * config.headDim;
            if (!gqa)
                throw Error(source, f + ".prev_op",
                            r.prevName + " has " + std::to_string(prevWidth) +
                                " output channels but the group's linears take " +
                                std::to_string(width));
            r.kvRepeats = config.numHeads / config.numKvHeads;
            r.headDim = config.headDim;
        }
        out.push_back(std::move(r));
    }
    return out;
}

at::Tensor constrainScales(const ResolvedScalingGroup& group, const at::Tensor& s) {
    if (group.kvRepeats == 1)
        return s;
    const int64_t kv = s.numel() / (group.kvRepeats * group.headDim);
    const at::Tensor m = std::get<0>(s.view({kv, group.kvRepeats, group.headDim}).max(1, true));
    return m.expand({kv, group.kvRepeats, group.headDim}).reshape({-1}).contiguous();
}

void applyScales(ResolvedScalingGroup& group, const at::Tensor& s) {
    const at::Tensor s32 = s.to(at::kFloat);
    auto scaled = [](const at::Tensor& t, const at::Tensor& by, bool divide) {
        const at::Tensor f = t.to(at::kFloat);
        const at::Tensor b = by.to(t.device());
        return (divide ? f / b : f * b).to(t.scalar_type());
    };
    // The preceding op's channels: one per kv-head channel under GQA (the constrained scales
    // agree across the repeats, so the first of each is the one).
    at::Tensor prev = s32;
    if (group.kvRepeats > 1) {
        const int64_t kv = s32.numel() / (group.kvRepeats * group.headDim);
        prev = s32.view({kv, group.kvRepeats, group.headDim}).select(1, 0).reshape({-1});
    }
    if (group.norm.weight) {
        *group.norm.weight = scaled(*group.norm.weight, prev, true);
        if (group.norm.bias && group.norm.bias->defined())
            *group.norm.bias = scaled(*group.norm.bias, prev, true);
    } else {
        LinearLayer& p = *group.prevLinear;
        p.weight = scaled(p.weight, prev.view({-1, 1}), true);
        if (p.bias.defined())
            p.bias = scaled(p.bias, prev, true);
    }
    for (LinearLayer* l : group.layers)
        l->weight = scaled(l->weight, s32.view({1, -1}), false);
    // An analysed run keeps, from the first code-choosing algorithm on, which scales moved onto
    // each layer, so rounding to nearest of its earlier weight can be compared on today's inputs.
    for (LayerPlan* p : group.plans)
        if (p && p->baseline.weight.defined())
            p->baseline.inputScale =
                p->baseline.inputScale.defined() ? p->baseline.inputScale * s32 : s32.clone();
    if (group.prevPlan && group.prevPlan->baseline.weight.defined())
        group.prevPlan->baseline.outputScale = group.prevPlan->baseline.outputScale.defined()
                                                   ? group.prevPlan->baseline.outputScale * prev
                                                   : prev.clone();
}

namespace {

at::Tensor reduceBatches(const std::vector<at::Tensor>& batches, bool mean) {
    at::Tensor acc;
    int64_t rows = 0;
    for (const at::Tensor& b : batches) {
        const at::Tensor a = b.to(at::kFloat).abs().reshape({-1, b.size(-1)});
        const at::Tensor part =
            mean ? a.sum(0, /*keepdim=*/false, at::kDouble) : std::get<0>(a.max(0));
        acc = !acc.defined() ? part : (mean ? acc + part : at::maximum(acc, part));
        rows += a.size(0);
    }
    if (!acc.defined())
        return acc;
    return mean ? (acc / double(std::max<int64_t>(1, rows))).to(at::kFloat) : acc;
}

} // namespace

at::Tensor channelAbsMax(const std::vector<at::Tensor>& batches) {
    return reduceBatches(batches, false);
}

at::Tensor channelAbsMean(const std::vector<at::Tensor>& batches) {
    return reduceBatches(batches, true);
}

void recordTransform(const ResolvedScalingGroup& group, const std::string& what) {
    std::vector<LayerPlan*> plans = group.plans;
    plans.push_back(group.prevPlan);
    for (LayerPlan* p : plans)
        if (p && (p->transforms.empty() || p->transforms.back() != what))
            p->transforms.push_back(what);
}

const std::vector<at::Tensor>&
capturedInputs(const std::map<std::string, std::vector<at::Tensor>>& inputs,
               const std::string& layer, const std::string& algorithm) {
    const auto it = inputs.find(layer);
    if (it == inputs.end() || it->second.empty())
        throw Error(layer, "inputs",
                    algorithm + " needs calibration inputs of this linear (none were captured)");
    return it->second;
}

} // namespace qs::algo
