#include "run/SearchUnits.h"

#include "model/ModelFamily.h"
#include "model/ModelLoader.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "run/PlanRowEvaluator.h"
#include "util/Error.h"

#include <map>

namespace qs {

namespace {

// Linears fed one norm's output (q, k, v; gate, up) that the family's scaling template names:
// serving runtimes fuse them into one matmul with one scheme. Block-relative names per group.
std::vector<std::vector<std::string>> sharedInputGroups(const ModelHandle& handle) {
    std::vector<std::vector<std::string>> groups;
    ScalingTemplate tmpl;
    try {
        tmpl = handle.family->scalingTemplate(handle.config);
    } catch (const Error&) {
        return groups; // no template: every linear is its own unit
    }
    for (const ScalingGroup& g : tmpl.groups)
        if (g.layers.size() > 1)
            groups.push_back(g.layers);
    return groups;
}

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0 &&
           s[s.size() - tail.size() - 1] == '.';
}

} // namespace

std::vector<SearchUnit> buildSearchUnits(const ModelHandle& handle, const Recipe& base) {
    std::vector<const ModuleNode*> nodes;
    const ModuleNode tree = handle.moduleTree();
    tree.collect("linear", nodes);
    const std::vector<std::vector<std::string>> groups = sharedInputGroups(handle);
    std::vector<SearchUnit> units;
    std::map<std::string, size_t> unitOf;
    for (const ModuleNode* n : nodes) {
        if (n->blockIndex < 0 || base.isExcluded(n->name))
            continue;
        std::string key = expertRowName(n->name);
        std::string pattern = key;
        if (key == n->name)
            for (const auto& group : groups)
                for (const std::string& rel : group)
                    if (endsWith(n->name, rel)) {
                        const std::string prefix = n->name.substr(0, n->name.size() - rel.size());
                        key = prefix + "{";
                        for (size_t i = 0; i < group.size(); ++i)
                            key += (i ? "," : "") + group[i];
                        key += "}";
                    }
        auto it = unitOf.find(key);
        if (it == unitOf.end()) {
            it = unitOf.emplace(key, units.size()).first;
            SearchUnit u;
            u.name = key;
            u.block = n->blockIndex;
            units.push_back(u);
        }
        SearchUnit& u = units[it->second];
        u.layers.push_back(n->name);
        if (pattern != n->name) {
            if (u.patterns.empty())
                u.patterns.push_back(pattern);
        } else {
            u.patterns.push_back(exactLayerPattern(n->name));
        }
    }
    return units;
}

std::string searchCandidateName(const std::vector<std::string>& candidates, int choice) {
    return size_t(choice) < candidates.size() ? candidates[size_t(choice)] : kUnquantizedCandidate;
}

Recipe recipeForChoice(const Recipe& base, const std::vector<std::string>& candidates,
                       const std::vector<SearchUnit>& units, const std::vector<int>& choice) {
    Recipe recipe = base;
    auto nameOf = [&candidates](int c) { return searchCandidateName(candidates, c); };
    std::map<int, int64_t> weightsOf;
    for (size_t u = 0; u < units.size(); ++u)
        if (nameOf(choice[u]) != kUnquantizedCandidate)
            weightsOf[choice[u]] += units[u].weights;
    int global = -1;
    for (const auto& [c, w] : weightsOf)
        if (global < 0 || w > weightsOf[global])
            global = c;
    if (global >= 0)
        recipe.global = quant::resolveScheme(candidates[size_t(global)]);
    for (size_t u = 0; u < units.size(); ++u) {
        if (choice[u] == global)
            continue;
        const std::string name = nameOf(choice[u]);
        for (const std::string& p : units[u].patterns) {
            if (name == kUnquantizedCandidate) {
                if (global >= 0)
                    recipe.exclude.push_back(p);
            } else {
                recipe.layerOverrides.push_back({p, quant::resolveScheme(name)});
            }
        }
    }
    return recipe;
}

ExportSizeReport writtenRecipeSize(const std::string& modelDir, const Recipe& recipe,
                                   const std::vector<std::string>& candidates,
                                   const std::vector<SearchUnit>& units,
                                   const std::vector<int>& choice) {
    ExportSizeReport written = exportSize(modelDir, recipe, {"quark"});
    std::map<std::string, const LinearSize*> plannedLinear;
    for (const LinearSize& l : written.linears)
        plannedLinear[l.name] = &l;
    for (size_t u = 0; u < units.size(); ++u) {
        const std::string name = searchCandidateName(candidates, choice[u]);
        for (const std::string& l : units[u].layers) {
            const LinearSize& s = *plannedLinear.at(l);
            const bool same = name == kUnquantizedCandidate
                                  ? !s.scheme
                                  : (s.scheme && *s.scheme == quant::resolveScheme(name));
            if (!same)
                throw Error("recipe search", l,
                            "internal error: the written recipe plans this layer otherwise than "
                            "the chosen point ('" +
                                name + "')");
        }
    }
    return written;
}

} // namespace qs
