#include "calib/LayerPlanner.h"

#include "quant/TypeTraits.h"
#include "recipe/LayerPattern.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

namespace qs {

LayerPlanner::LayerPlanner(SchemeFn schemeFor, OutputFn outputSpecFor, std::string unfitPolicy)
    : m_schemeFor(std::move(schemeFor)), m_outputSpecFor(std::move(outputSpecFor)),
      m_unfitPolicy(std::move(unfitPolicy)) {
    if (m_unfitPolicy != "error" && m_unfitPolicy != "skip")
        throw Error("recipe", "unfit_policy",
                    "unknown policy '" + m_unfitPolicy + "' (error or skip)");
}

LayerPlanner LayerPlanner::forRecipe(const Recipe& recipe) {
    // The recipe is copied into the functions: a planner outlives no recipe it was made from.
    LayerPlanner planner(
        [recipe](const std::string& n, const std::string& k) { return recipe.schemeFor(n, k); },
        [recipe](const std::string& n, const std::string& k) { return recipe.kvOutputFor(n, k); },
        recipe.unfitPolicy);
    planner.m_isExcluded = [recipe](const std::string& n) { return recipe.isExcluded(n); };
    return planner;
}

std::string LayerPlanner::unfitReason(const quant::QuantScheme& scheme, int64_t in) {
    // Weights group along the input axis; so do per-group activation specs. MX/NVFP4-style
    // fixed blocks are zero-padded as Quark does, so only free group sizes must divide.
    auto check = [&](const quant::QuantSpec& s, const char* what) -> std::string {
        if (s.granularity != quant::Granularity::PerGroup || quant::hasFixedBlock(s.dtype))
            return {};
        if (s.groupSize > 0 && in % s.groupSize != 0)
            return std::string(what) + " group size " + std::to_string(s.groupSize) +
                   " does not divide in_features " + std::to_string(in);
        return {};
    };
    std::string r = check(scheme.weight, "weight");
    if (r.empty() && scheme.weightPreStage)
        r = check(*scheme.weightPreStage, "weight");
    if (r.empty() && scheme.input)
        r = check(*scheme.input, "input");
    return r;
}

std::vector<const ModuleNode*> LayerPlanner::blockLinears(const ModuleNode& tree) {
    std::vector<const ModuleNode*> all, out;
    tree.collect("linear", all);
    for (const ModuleNode* n : all)
        if (n->blockIndex >= 0 && n->shape.size() == 2)
            out.push_back(n);
    return out;
}

std::optional<quant::QuantSpec>
LayerPlanner::outputSpecFor(const std::string& layer, const std::string& kind,
                            const std::optional<quant::QuantScheme>& scheme) const {
    // An explicit KV-cache spec wins over the scheme's own output spec (Quark's kv_cache config
    // overrides the layer's output_tensors on k_proj/v_proj).
    if (std::optional<quant::QuantSpec> kv = m_outputSpecFor(layer, kind))
        return kv;
    return scheme ? scheme->output : std::nullopt;
}

void LayerPlanner::markUnfit(const std::string& layer, const std::string& reason) {
    if (m_unfit.emplace(layer, reason).second)
        m_skipped.push_back(layer + ": " + reason);
}

void LayerPlanner::checkShapes(const ModuleNode& tree) {
    std::string problems;
    for (const ModuleNode* n : blockLinears(tree)) {
        const auto scheme = m_schemeFor(n->name, layerKindOf(n->name));
        if (!scheme)
            continue;
        const std::string reason = unfitReason(*scheme, n->shape[1]);
        if (reason.empty())
            continue;
        problems += "\n  " + n->name + ": " + reason;
        if (m_unfitPolicy == "skip")
            markUnfit(n->name, reason);
    }
    if (!problems.empty() && m_unfitPolicy == "error")
        throw Error("recipe", "layers",
                    "these layers do not fit their scheme (exclude them, change their scheme, or "
                    "set unfit_policy \"skip\"):" +
                        problems);
}

std::vector<std::pair<std::string, quant::QuantScheme>>
LayerPlanner::quantizedLinears(const ModuleNode& tree) const {
    std::vector<std::pair<std::string, quant::QuantScheme>> out;
    for (const ModuleNode* n : blockLinears(tree))
        if (auto scheme = m_schemeFor(n->name, layerKindOf(n->name));
            scheme && !m_unfit.count(n->name))
            out.emplace_back(n->name, *scheme);
    return out;
}

bool LayerPlanner::needsCalibration(const ModuleNode& tree) const {
    for (const ModuleNode* n : blockLinears(tree)) {
        const std::string kind = layerKindOf(n->name);
        const auto scheme = m_schemeFor(n->name, kind);
        const auto stored = m_stored.find(n->name);
        const bool storedIn = stored != m_stored.end() && stored->second.input;
        const bool storedOut = stored != m_stored.end() && stored->second.output;
        if (scheme && scheme->input && !scheme->input->isDynamic && !m_unfit.count(n->name) &&
            !storedIn)
            return true;
        const auto kv = m_outputSpecFor(n->name, kind);
        const auto out = kv ? kv : (scheme ? scheme->output : std::nullopt);
        if (out && !out->isDynamic && !storedOut)
            return true;
    }
    return false;
}

std::vector<LayerPlan> LayerPlanner::planBlock(DecoderBlock& block) {
    std::vector<LayerPlan> plans;
    for (LinearLayer* l : block.linears()) {
        LayerPlan p;
        p.name = l->name;
        p.kind = l->kind;
        p.block = block.index();
        p.shape = {l->weight.size(0), l->weight.size(1)};
        p.scheme = m_schemeFor(l->name, l->kind);
        p.outputIsKvCache = m_outputSpecFor(l->name, l->kind).has_value();
        p.outputSpec = outputSpecFor(l->name, l->kind, p.scheme);
        if (const auto s = m_stored.find(l->name); s != m_stored.end())
            p.stored = s->second;
        if (p.scheme && !m_unfit.count(l->name)) {
            const std::string reason = unfitReason(*p.scheme, p.shape[1]);
            if (!reason.empty()) {
                if (m_unfitPolicy == "error")
                    throw Error("recipe", l->name, reason);
                markUnfit(l->name, reason);
            }
        }
        if (p.scheme && m_unfit.count(l->name)) {
            p.note = "not quantized: " + m_unfit.at(l->name);
            p.scheme.reset();
            // The scheme's own output spec goes with it; a KV-cache spec stays.
            p.outputSpec = outputSpecFor(l->name, l->kind, p.scheme);
        } else if (!p.scheme && !p.outputSpec) {
            p.note = m_isExcluded && m_isExcluded(l->name) ? "excluded" : "no scheme in the recipe";
        }
        plans.push_back(std::move(p));
    }
    return plans;
}

} // namespace qs
