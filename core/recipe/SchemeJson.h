// How schemes and KV-cache specs appear inside recipe JSON, and the error re-mapping that makes
// quant-layer errors point at the recipe field (shared by Recipe, QuarkConfig and RecipeFlags).
#pragma once

#include "quant/QuantScheme.h"
#include "quant/QuantSpec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace qs {

class Error;

// The registry name when `scheme.name` is set and still resolves to the same numerics; for a
// name that takes a group size (Quark's per-group names) and has another than the default,
// {"name": "w_uint4_per_group_asym", "group_size": 32}; else the Quark layer config object.
nlohmann::json schemeToRecipeJson(const quant::QuantScheme& scheme);
// A registry name string, a {"name", "group_size"} object or a Quark layer config object. Errors
// name `field` inside `source`, e.g. field "layer_overrides[2].scheme" ->
// "layer_overrides[2].scheme.weight.group_size" or "global.group_size".
quant::QuantScheme schemeFromRecipeJson(const nlohmann::json& value, const std::string& source,
                                        const std::string& field);

// "fp8" for fp8KvCacheSpec(), else the Quark tensor spec.
nlohmann::json kvSpecToRecipeJson(const quant::QuantSpec& spec);
quant::QuantSpec kvSpecFromRecipeJson(const nlohmann::json& value, const std::string& source,
                                      const std::string& field);

// Runs `body`, which reports errors with a source that starts with `field` (the quant layer's
// convention: Error(source + ".weight", "group_size", ...)), and rethrows them as
// Error(source, "<field>.weight.group_size", reason).
void rethrowAtField(const std::string& source, const std::string& field,
                    const std::function<void()>& body);

std::string joinNames(const std::vector<std::string>& names);

// The same scheme with group size `groupSize` (Quark's --group_size) when its name takes one
// (quant::SchemeName::takesGroupSize); nullopt when it does not (another name, a custom scheme).
// A group size outside limits::groupSize throws qs::Error(source, field, ...).
std::optional<quant::QuantScheme> withGroupSize(const quant::QuantScheme& scheme, int64_t groupSize,
                                                const std::string& source,
                                                const std::string& field);

} // namespace qs
