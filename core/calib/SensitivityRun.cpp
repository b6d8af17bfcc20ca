#include "calib/SensitivityRun.h"

#include "model/ModelLoader.h"
#include "util/Error.h"

namespace qs {

std::string exactLayerPattern(const std::string& name) {
    std::string escaped;
    for (char c : name) {
        if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos)
            escaped += '\\';
        escaped += c;
    }
    return "re:" + escaped;
}

SensitivityResult runSensitivity(const QuantizationRequest& request,
                                 const PipelineProgress& progress,
                                 const std::function<void(const SensitivityRow&)>& onRow) {
    QuantizationRequest base = request;
    base.evaluate = true;
    base.analyze = false;
    base.outDir.clear();
    base.onBlockReports = nullptr;

    // The layers the recipe quantizes, from the module tree (headers only).
    const ModuleNode tree = openModelHandle(request.modelDir).moduleTree();
    std::vector<const ModuleNode*> nodes;
    tree.collect("linear", nodes);
    std::vector<std::string> layers;
    for (const ModuleNode* n : nodes) {
        if (n->blockIndex < 0)
            continue;
        const std::string kind = n->name.substr(n->name.rfind('.') + 1);
        if (request.recipe.schemeFor(n->name, kind))
            layers.push_back(n->name);
    }
    if (layers.empty())
        throw Error("recipe", "global", "the recipe quantizes no layer: nothing to measure");

    const double runs = double(2 * layers.size() + 2);
    int done = 0;
    auto run = [&](const Recipe& recipe, const std::string& what) {
        QuantizationRequest r = base;
        r.recipe = recipe;
        const QuantizationOutcome out = runQuantization(r, [&](double f, const std::string& m) {
            return !progress || progress((done + f) / runs, what + ": " + m);
        });
        ++done;
        return out.perplexity->perplexity;
    };

    SensitivityResult result;
    Recipe none = request.recipe;
    none.global.reset();
    none.layerOverrides.clear();
    none.layerTypeOverrides.clear();
    none.kvCache.reset();
    result.fpPerplexity = run(none, "full precision");
    result.fullPerplexity = run(request.recipe, "whole recipe");
    for (const std::string& layer : layers) {
        SensitivityRow row;
        row.layer = layer;
        Recipe alone = request.recipe;
        alone.kvCache.reset();
        // Negative lookahead: every other layer is excluded.
        alone.exclude.push_back("re:(?!" + exactLayerPattern(layer).substr(3) + "$).*");
        row.alonePerplexity = run(alone, layer + " alone");
        Recipe allBut = request.recipe;
        allBut.exclude.push_back(exactLayerPattern(layer));
        row.allButPerplexity = run(allBut, "all but " + layer);
        if (onRow)
            onRow(row);
        result.rows.push_back(row);
    }
    return result;
}

} // namespace qs
