// A recipe to and from the `quantization_config` block of a Quark "hf_format" export
// (config.json), the form transformers + amd-quark and vLLM load. Layout as written by Quark's
// QConfig.to_dict() plus the exporter's "export" block (quark/torch/quantization/config/
// config.py, quark/torch/export/api.py):
//   {"quant_method": "quark", "version", "global_quant_config", "layer_quant_config",
//    "layer_type_quant_config", "kv_cache_quant_config", "kv_cache_post_rope", "exclude",
//    "algo_config", "softmax_quant_spec", "quant_mode",
//    "export": {"kv_cache_group", "min_kv_scale", "pack_method", "weight_format",
//               "weight_merge_groups"}}
//
// How consumers read it (and why the writer works the way it does):
// - Quark: exclude by exact name or fnmatch; layer_quant_config by exact name, else the FIRST
//   fnmatch key in file order; layer_type_quant_config by module class ("Linear"); then global.
//   kv_cache_quant_config entries replace the whole config of matching layers.
// - vLLM: exclude by exact name or "re:" (re.match); layer_quant_config keys with '*' by fnmatch,
//   other keys by substring, FIRST match in file order; the KV-cache spec is the output_tensors
//   of the layer_quant_config entries matching export.kv_cache_group (all must agree).
// nlohmann::json does not keep object key order, so the writer never relies on it: given the
// model's layer names it drops every pattern key that would give some layer a config other
// than the recipe's and writes those layers under their exact names instead.
//
// What a Quark config cannot express (lost or normalised on recipe -> Quark -> recipe):
// calibration (an imported recipe calibrates as Quark does: mode "float", observers on the
// full-precision model), evaluation, export targets, unfit policy, provenance; scheme names
// (restored for registry schemes by numerics); the order of overlapping layer overrides (the import
// orders patterns from least to most specific, exact names last); wildcard exclusions and
// patterns that would be ambiguous become exact layer names when layer names are given;
// layer-type overrides become "*.<kind>" keys (read back as layer-type overrides) and a
// top-level layer (no dot in its name) gets its type override as an exact-name key.
#pragma once

#include "quant/QuantTypes.h"
#include "recipe/Recipe.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qs {

// Accepts a whole config.json (with a "quantization_config" key) or the block itself. Refuses,
// naming the field: non-Quark quant_method, fx_graph_mode, attention (softmax) quantization,
// post-RoPE KV caches, KV-cache groups other than k_proj/v_proj, non-zero min_kv_scale, weight
// merge groups, shared scale groups, layer types other than Linear, algorithms we do not know,
// and every tensor spec the quant layer cannot represent.
Recipe recipeFromQuarkConfig(const nlohmann::json& config, const std::string& source);
Recipe recipeFromQuarkConfigFile(const std::string& configJsonPath);

struct QuarkExportOptions {
    std::string weightFormat = "real_quantized"; // "real_quantized" | "fake_quantized"
    quant::PackOrder packMethod = quant::PackOrder::Reorder;
    std::string quarkVersion = "0.11"; // the Quark release whose config layout this follows
};

// `layerNames`: the model's quantizable linear layers (their kind is the last name component).
// With names, exclusions are written as exact names (plus "re:" patterns as they are) and
// layer_quant_config is made unambiguous as described above; without names, patterns are
// written as they are and "re:" layer overrides are refused (Quark has no regex keys).
nlohmann::json quarkConfigFromRecipe(const Recipe& recipe,
                                     const std::vector<std::string>& layerNames,
                                     const QuarkExportOptions& options = {});

} // namespace qs
