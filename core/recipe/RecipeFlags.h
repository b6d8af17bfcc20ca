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
    // Quark's --group_size: the group size of every scheme of the resulting recipe whose name
    // takes one (w_uint4_per_group_asym, ...; global, overrides, per-kind overrides); -1 = not
    // given. Given while no such scheme is in the recipe, or with a scheme that fixes another
    // group size (int4_wo_128), it is an error naming --group_size.
    int64_t groupSize = -1;
    // Quark's --quant_algo names (awq, gptq, gptaq, qronos, smoothquant, autosmoothquant,
    // rotation, quarot) and its --pre_quantization_optimization names (rotation, quarot,
    // smoothquant). Either given replaces the recipe's algorithms with both lists, the
    // pre-quantization ones first (in Quark's order: rotation, quarot, smoothquant), all in the
    // catalog's order of stages.
    std::vector<std::string> quantAlgos;
    std::vector<std::string> preQuantOptimizations;
};

// A recipe from flags alone (defaults for everything not given).
Recipe recipeFromFlags(const QuantFlags& flags);

// Flags that were given replace the recipe's corresponding fields (exclusions and layer schemes
// replace the whole list, they do not append). Unknown scheme names throw qs::Error listing the
// valid names; the resulting recipe is validated. On error `recipe` is left unchanged.
void applyFlags(Recipe& recipe, const QuantFlags& flags);

// Accepted --kv_cache_dtype values.
const std::vector<std::string>& kvCacheDtypeChoices();

// Accepted --pre_quantization_optimization values (Quark's quantize_quark.py): "rotation" (R1,
// Quark 0.13's llama template), "quarot" (Quark's deprecated QuaRot: rotation with R1, R2 and
// R4; R3, the online rotation of q and k after RoPE, is the identity on the function here since
// nothing is quantized after RoPE), "smoothquant" (the catalog's defaults: Quark's template).
const std::vector<std::string>& preQuantizationOptimizationChoices();
// The recipe's algorithm for one of those names.
AlgorithmSpec preQuantizationOptimization(const std::string& name);

} // namespace qs
