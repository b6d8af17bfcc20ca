// A quantization recipe: the single source of truth for one quantization run, saved as
// versioned JSON. The CLI flags, the GUI and a Quark quantization_config all map onto it
// (RecipeFlags.h, QuarkConfig.h). Plain value type, no Torch.
//
// Which scheme a linear layer gets (schemeFor), highest precedence first:
//   1. exclude: a layer matching any exclude pattern stays unquantized (nullopt);
//   2. layer_overrides: the LAST override whose pattern matches the layer name;
//   3. layer_type_overrides: the override for the layer's kind ("q_proj", "down_proj", "fc1",
//      the last component of the layer name);
//   4. global (absent: the layer stays unquantized).
// The KV cache spec is separate (kvOutputFor): it quantizes the OUTPUT of every k_proj and
// v_proj, replacing the output spec of their scheme, and applies even to excluded k/v
// projections (as in Quark, where exclusion covers weights and inputs only).
//
// Patterns are LayerPattern.h patterns: fnmatch ("*down_proj", "*layers.0.mlp.down_proj") or
// "re:<ECMAScript regex>" (full match).
//
// JSON form (key order as written by save()):
//   {"format": "quantscope-recipe", "version": 1,
//    "global": "int4_wo_128" | {Quark layer config} | null,
//    "layer_overrides": [{"pattern": "*down_proj", "scheme": "int8"}],
//    "layer_type_overrides": {"o_proj": "fp8"},
//    "exclude": ["lm_head"],
//    "kv_cache": null | "fp8" | {Quark tensor spec},
//    "algorithms": [{"name": "gptq", "damp_percent": 0.01, ...}],
//    "calibration": {"data": "", "num_samples": 128, "seq_len": 512, "seed": 0,
//                    "mode": "float" | "sequential"},
//    "evaluation": {"data": "", "seq_len": 0, "max_windows": 0},
//    "export_targets": ["hf_fake"],
//    "unfit_policy": "error",
//    "provenance": {"model_config_hash": "", "tool_version": "", "created_at": "",
//                   "model_path": "", "device": "", "dtype": ""}}
// A scheme is written as its registry name when it has one and the name still resolves to the
// same numerics; a name that takes a group size (Quark's per-group names, default 128) with
// another one as {"name": "w_uint4_per_group_asym", "group_size": 32}; else as a Quark layer
// config ({"weight", "input_tensors", "output_tensors"}). Each of the three forms is accepted
// wherever a scheme is (global, layer_overrides[i].scheme, layer_type_overrides.KIND).
#pragma once

#include "quant/QuantScheme.h"
#include "quant/QuantSpec.h"
#include "recipe/EvaluationSpec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// What static activation observers see while they calibrate.
//  - Float (Quark's behaviour, the default): the full-precision model: float weights and
//    unquantized activations upstream, so a layer's ranges do not depend on the other layers'
//    quantization.
//  - Sequential: the already-quantized model upstream (weights and activations of earlier
//    blocks, quantized weights of this block), so ranges follow the error the layer will see.
enum class CalibrationMode { Float, Sequential };
std::string calibrationModeName(CalibrationMode mode);
// nullopt for an unknown name.
std::optional<CalibrationMode> calibrationModeFromName(const std::string& name);
const std::vector<std::string>& knownCalibrationModes();

struct CalibrationSpec {
    std::string dataPath; // text or token file; empty = the tool's default calibration set
    int64_t numSamples = 128;
    int64_t seqLen = 512;
    uint64_t seed = 0;
    CalibrationMode mode = CalibrationMode::Float;
    bool operator==(const CalibrationSpec& o) const {
        return dataPath == o.dataPath && numSamples == o.numSamples && seqLen == o.seqLen &&
               seed == o.seed && mode == o.mode;
    }
};

struct LayerOverride {
    std::string pattern;
    quant::QuantScheme scheme;
    bool operator==(const LayerOverride& o) const {
        return pattern == o.pattern && scheme == o.scheme;
    }
};

// One algorithm (AlgorithmCatalog.h names) with its parameters as a JSON object without
// "name"; parameters left out take the algorithm's defaults.
struct AlgorithmSpec {
    std::string name;
    nlohmann::json params = nlohmann::json::object();
    bool operator==(const AlgorithmSpec& o) const { return name == o.name && params == o.params; }
};

struct Provenance {
    std::string modelConfigHash; // SHA-256 hex of the model's canonical config.json (Provenance.h)
    std::string toolVersion;
    std::string createdAt; // ISO 8601, UTC
    std::string modelPath;
    // Where the run that recorded the recipe computed, as its results name it ("cpu", "cuda";
    // "float32", "bfloat16"): the same recipe gives other numbers in another precision.
    std::string device;
    std::string dtype;
    bool operator==(const Provenance& o) const {
        return modelConfigHash == o.modelConfigHash && toolVersion == o.toolVersion &&
               createdAt == o.createdAt && modelPath == o.modelPath && device == o.device &&
               dtype == o.dtype;
    }
};

struct Recipe {
    static constexpr int kFormatVersion = 1;
    static constexpr const char* kFormatName = "quantscope-recipe";

    std::optional<quant::QuantScheme> global;
    std::vector<LayerOverride> layerOverrides;
    std::map<std::string, quant::QuantScheme> layerTypeOverrides; // key: linear kind
    std::vector<std::string> exclude;
    std::optional<quant::QuantSpec> kvCache;
    std::vector<AlgorithmSpec> algorithms;
    CalibrationSpec calibration;
    EvaluationSpec evaluation;
    std::vector<std::string> exportTargets; // "hf_fake"; "quark", "gguf", "onnx" accepted
    std::string unfitPolicy = "error";      // "error" | "skip" (unfit layers stay unquantized)
    Provenance provenance;

    // ---- resolution (see the precedence above) ----
    // Whether any layer or the KV cache gets a scheme. A recipe that quantizes nothing run over
    // a checkpoint with stored quantization runs it as stored (run/QuantizationRun.h).
    bool quantizesAnything() const {
        return global || !layerOverrides.empty() || !layerTypeOverrides.empty() || kvCache;
    }
    bool isExcluded(const std::string& layerName) const;
    std::optional<quant::QuantScheme> schemeFor(const std::string& layerName,
                                                const std::string& kind) const;
    std::optional<quant::QuantSpec> kvOutputFor(const std::string& layerName,
                                                const std::string& kind) const;

    // ---- JSON ----
    nlohmann::json toJson() const;
    // Same content, keys in the documented order (what save() writes).
    nlohmann::ordered_json toOrderedJson() const;
    // Strict: unknown keys, wrong types, unknown scheme names or dtypes, invalid "re:" regexes,
    // out-of-range counts and versions newer than kFormatVersion throw
    // qs::Error(source, field path such as "layer_overrides[2].scheme.weight.group_size", why).
    static Recipe fromJson(const nlohmann::json& json, const std::string& source);
    static Recipe load(const std::string& path);
    // Atomic (write to a temporary file, then rename); throws qs::Error naming the path.
    void save(const std::string& path) const;

    // The semantic checks fromJson applies, for recipes built in code (flags, GUI, Quark import).
    void validate(const std::string& source) const;

    static const std::vector<std::string>& knownExportTargets();
    static const std::vector<std::string>& knownUnfitPolicies();

    // Schemes compare by numerics (quant::QuantScheme::operator==), not by name.
    bool operator==(const Recipe& o) const;
    bool operator!=(const Recipe& o) const { return !(*this == o); }
};

// The standard KV-cache spec: FP8 E4M3, per tensor, static, min/max (Quark's
// FP8E4M3PerTensorSpec(observer_method="min_max", is_dynamic=False), what its LLM template uses
// for kv_cache_scheme="fp8" and the only KV-cache quantization vLLM loads).
quant::QuantSpec fp8KvCacheSpec();

// Sets scheme.name to the first non-legacy registry name whose scheme has the same numerics, if
// any (keeps recipes imported from Quark readable). Returns whether a name was found.
bool nameKnownScheme(quant::QuantScheme& scheme);

} // namespace qs
