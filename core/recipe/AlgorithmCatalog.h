// The quantization algorithms a recipe may name, with the parameters each takes. Parameter names
// and types follow Quark's algorithm dataclasses (quark/torch/quantization/config/config.py:
// GPTQConfig, AWQConfig, SmoothQuantConfig, AutoSmoothQuantConfig, RotationConfig) so a Quark
// algo_config maps one to one. The engine runs GPTQ, AWQ, SmoothQuant and AutoSmoothQuant
// (makeBlockTransforms); recipes keep the others so they survive a round trip and are validated
// early, and the engine refuses them by name.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qs {

// One parameter of an algorithm as the catalog describes it: what the GUI lists and the
// validation checks (names and types follow Quark's algorithm dataclasses).
struct AlgorithmParameterInfo {
    std::string name;
    std::string
        type; // "true/false", "an integer", "a number", "a string", "a list of strings", ...
    bool nullable = false;
    std::vector<std::string> choices; // allowed strings, empty = any
};

struct AlgorithmInfo {
    std::string name;      // ours: "gptq", "awq", "smoothquant", "autosmoothquant", "rotation"
    std::string quarkName; // Quark's algo_config name
    std::vector<AlgorithmParameterInfo> parameters;
};

// The table every reader of algorithm parameters uses (validation, the recipe panel).
const std::vector<AlgorithmInfo>& algorithmCatalog();

// "gptq", "awq", "smoothquant", "autosmoothquant", "rotation".
const std::vector<std::string>& knownAlgorithmNames();

// Checks `params` (a JSON object without "name") against the algorithm's parameter table.
// Throws qs::Error(source, fieldPrefix + "." + key, reason) for unknown algorithms (field
// fieldPrefix + ".name"), unknown parameters, wrong JSON types, out-of-range values and the
// combinations Quark itself rejects (gptq desc_act without static_groups).
void validateAlgorithmParams(const std::string& name, const nlohmann::json& params,
                             const std::string& source, const std::string& fieldPrefix);

// Quark's algo_config "name" for one of ours ("smoothquant" is Quark's "smooth"), and back.
// algorithmFromQuarkName also knows Quark's deprecated "quarot" (= rotation) and returns nullopt
// for algorithms we do not know (gptaq, qronos, svdquant, ...).
std::string quarkAlgorithmName(const std::string& name);
std::optional<std::string> algorithmFromQuarkName(const std::string& quarkName);

} // namespace qs
