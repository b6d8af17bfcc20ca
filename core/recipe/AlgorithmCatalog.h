// The quantization algorithms a recipe may name, with the parameters each takes. Parameter names
// and types follow Quark's algorithm dataclasses (quark/torch/quantization/config/config.py:
// GPTQConfig, GPTAQConfig, QronosConfig, AWQConfig, SmoothQuantConfig, AutoSmoothQuantConfig,
// RotationConfig) so a Quark algo_config maps one to one. Every algorithm is kept by recipes
// (round trip, early validation); `runnable` says which the engine runs (the others are refused
// by name when a run starts).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qs {

// One parameter of an algorithm as the catalog describes it: what the GUI lists and the
// validation checks (names and types follow Quark's algorithm dataclasses).
enum class AlgorithmParamKind { Bool, Int, Number, String, StringList, ObjectList, Object };

struct AlgorithmParameterInfo {
    std::string name;
    AlgorithmParamKind kind;
    std::string
        type; // "true/false", "an integer", "a number", "a string", "a list of strings", ...
    bool nullable = false;
    std::vector<std::string> choices; // allowed strings, empty = any
    // The value used when a recipe leaves the parameter out (Quark's default); null when the
    // model decides (its family's scaling template, its module names).
    nlohmann::json defaultValue;
};

struct AlgorithmInfo {
    std::string name;      // ours: "gptq", "gptaq", "qronos", "awq", "smoothquant", ...
    std::string quarkName; // Quark's algo_config name
    std::vector<AlgorithmParameterInfo> parameters;
    // Whether this build's engine runs it (makeBlockTransforms accepts it; a test keeps the two
    // in step).
    bool runnable = false;
    // Position in Quark's order of application: rotation, then smoothing, then the weight
    // algorithms (AWQ, GPTQ). A recipe lists its algorithms in this order.
    int stage = 0;
};

// The table every reader of algorithm parameters uses (validation, the recipe panel).
const std::vector<AlgorithmInfo>& algorithmCatalog();

// The catalog's entry of `name`; nullptr when unknown.
const AlgorithmInfo* findAlgorithmInfo(const std::string& name);

// "gptq", "gptaq", "qronos", "awq", "smoothquant", "autosmoothquant", "rotation".
const std::vector<std::string>& knownAlgorithmNames();

// Checks `params` (a JSON object without "name") against the algorithm's parameter table.
// Throws qs::Error(source, fieldPrefix + "." + key, reason) for unknown algorithms (field
// fieldPrefix + ".name"), unknown parameters, wrong JSON types, out-of-range values and the
// combinations Quark itself rejects (gptq desc_act without static_groups).
void validateAlgorithmParams(const std::string& name, const nlohmann::json& params,
                             const std::string& source, const std::string& fieldPrefix);

// The value of parameter `name` of `algorithm` in `params`: the recipe's when it gives one
// (non-null), else the catalog's default (null when the model decides). Every transform reads its
// parameters through this, so a default lives only in the catalog. Throws qs::Error for a
// parameter the catalog does not list.
nlohmann::json algorithmParam(const std::string& algorithm, const nlohmann::json& params,
                              const std::string& name);

// Quark's algo_config "name" for one of ours ("smoothquant" is Quark's "smooth"), and back.
// algorithmFromQuarkName also knows Quark's deprecated "quarot" (= rotation) and returns nullopt
// for algorithms we do not know (svdquant, osscar, ...).
std::string quarkAlgorithmName(const std::string& name);
std::optional<std::string> algorithmFromQuarkName(const std::string& quarkName);

} // namespace qs
