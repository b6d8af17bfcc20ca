// libFuzzer target: a Quark config.json (or its bare quantization_config) as `recipe
// --from-quark` reads it. Drives recipeFromQuarkConfigFile from a real file, then checks the
// imported recipe the way the CLI uses it: it validates, survives the recipe JSON round trip,
// and exports back to a Quark config. A finding is a crash, a sanitizer report, an exception
// other than qs::Error, or an imported recipe that fails its own validation or round trip
// (__builtin_trap).
#include "FuzzSupport.h"
#include "recipe/QuarkConfig.h"
#include "recipe/Recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    dir.write("config.json", std::string(reinterpret_cast<const char*>(data), size));
    qs::Recipe recipe;
    try {
        recipe = qs::recipeFromQuarkConfigFile(dir.file("config.json"));
    } catch (const qs::Error&) {
        return 0;
    }
    try {
        recipe.validate("fuzz/imported");
        if (qs::Recipe::fromJson(recipe.toJson(), "fuzz/imported.json") != recipe)
            __builtin_trap();
    } catch (const qs::Error&) {
        __builtin_trap();
    }
    qsfuzz::expectCleanRefusal([&] {
        qs::quarkConfigFromRecipe(
            recipe, {"model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj", "lm_head"});
    });
    return 0;
}
