// libFuzzer target: a recipe file. Drives Recipe::load from a real file (readTextFile,
// parseJsonText, RecipeJson, SchemeJson, QuantSpec, algorithm parameters, layer patterns), then
// what a run does with an accepted recipe: resolve every layer of a small model, save it and read
// it back, and export it as a Quark config. A finding is a crash, a sanitizer report, an exception
// other than qs::Error, or an accepted recipe that does not survive its own JSON round trip
// (__builtin_trap: replaying a saved recipe must reproduce the run).
#include "FuzzSupport.h"
#include "recipe/LayerPattern.h"
#include "recipe/QuarkConfig.h"
#include "recipe/Recipe.h"

namespace {

const std::vector<std::string>& layerNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (int i = 0; i < 2; ++i)
            for (const char* l :
                 {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                  "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
                out.push_back("model.layers." + std::to_string(i) + "." + l);
        return out;
    }();
    return names;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    dir.write("recipe.json", std::string(reinterpret_cast<const char*>(data), size));
    qs::Recipe recipe;
    try {
        recipe = qs::Recipe::load(dir.file("recipe.json"));
    } catch (const qs::Error&) {
        return 0;
    }
    for (const std::string& name : layerNames()) {
        const std::string kind = qs::layerKindOf(name);
        recipe.isExcluded(name);
        recipe.schemeFor(name, kind);
        recipe.kvOutputFor(name, kind);
    }
    // Round trip: what save() writes must load back to the same recipe.
    const nlohmann::json saved = recipe.toJson();
    try {
        if (qs::Recipe::fromJson(saved, "fuzz/saved.json") != recipe)
            __builtin_trap();
    } catch (const qs::Error&) {
        __builtin_trap();
    }
    qsfuzz::expectCleanRefusal([&] { qs::quarkConfigFromRecipe(recipe, layerNames()); });
    qsfuzz::expectCleanRefusal([&] { qs::quarkConfigFromRecipe(recipe, {}); });
    return 0;
}
