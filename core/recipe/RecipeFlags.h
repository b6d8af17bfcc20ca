// The Quark-style command-line flags that shape a recipe, shared by the CLI and the GUI so both
// build recipes the same way. Names follow Quark's LLM PTQ example (quantize_quark.py):
// --quant_scheme, --exclude_layers, --layer_quant_scheme, --kv_cache_dtype, --dataset,
// --num_calib_data, --seq_len; errors name those flags as the field.
#pragma once

#include "recipe/Recipe.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qs {

struct QuantFlags {
    std::string quantScheme;                // registry name; empty = not given
    std::vector<std::string> excludeLayers; // patterns; empty = not given
    std::vector<std::pair<std::string, std::string>> layerQuantSchemes; // (pattern, scheme name)
    std::string kvCacheDtype;  // "fp8", "none", or empty = not given
    std::string calibData;     // empty = not given
    int64_t numCalibData = -1; // -1 = not given
    int64_t seqLen = -1;       // -1 = not given
    std::string calibMode;     // "float", "sequential", or empty = not given
};

// A recipe from flags alone (defaults for everything not given).
Recipe recipeFromFlags(const QuantFlags& flags);

// Flags that were given replace the recipe's corresponding fields (exclusions and layer schemes
// replace the whole list, they do not append). Unknown scheme names throw qs::Error listing the
// valid names; the resulting recipe is validated. On error `recipe` is left unchanged.
void applyFlags(Recipe& recipe, const QuantFlags& flags);

// Accepted --kv_cache_dtype values.
const std::vector<std::string>& kvCacheDtypeChoices();

} // namespace qs
