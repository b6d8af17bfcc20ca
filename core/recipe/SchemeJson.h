// How schemes and KV-cache specs appear inside recipe JSON, and the error re-mapping that makes
// quant-layer errors point at the recipe field (shared by Recipe, QuarkConfig and RecipeFlags).
#pragma once

#include "quant/QuantScheme.h"
#include "quant/QuantSpec.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace qs {

class Error;

// The registry name when `scheme.name` is set and still resolves to the same numerics, else the
// Quark layer config object.
nlohmann::json schemeToRecipeJson(const quant::QuantScheme& scheme);
// A registry name string or a Quark layer config object. Errors name `field` inside `source`,
// e.g. field "layer_overrides[2].scheme" -> "layer_overrides[2].scheme.weight.group_size".
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

} // namespace qs
