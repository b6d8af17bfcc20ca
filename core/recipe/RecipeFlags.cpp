#include "recipe/RecipeFlags.h"

#include "quant/SchemeRegistry.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/LayerPattern.h"
#include "recipe/QuarkDatasets.h"
#include "recipe/RecipeLimits.h"
#include "recipe/SchemeJson.h"
#include "util/Error.h"

#include <algorithm>

namespace qs {

namespace {

constexpr const char* kSource = "command line";

quant::QuantScheme schemeFromFlag(const std::string& name, const std::string& flag) {
    try {
        return quant::resolveScheme(name);
    } catch (const Error& e) {
        throw Error(kSource, flag, e.reason());
    }
}

// --group_size over every scheme of `r` whose name takes one; a scheme named on the command line
// that fixes another group size is a conflict, not something to ignore silently.
void applyGroupSize(Recipe& r, const QuantFlags& flags) {
    const char* flag = "--group_size";
    const auto named = [&](const std::string& name) {
        const quant::SchemeName* entry = quant::findSchemeName(name);
        if (entry && !entry->takesGroupSize && entry->groupSize != 0 &&
            entry->groupSize != flags.groupSize)
            throw Error(kSource, flag,
                        "scheme '" + name + "' fixes its group size at " +
                            std::to_string(entry->groupSize) + ", not " +
                            std::to_string(flags.groupSize) +
                            "; Quark's per-group names take --group_size "
                            "(w_uint4_per_group_asym, ...)");
    };
    if (!flags.quantScheme.empty())
        named(flags.quantScheme);
    for (const auto& [pattern, scheme] : flags.layerQuantSchemes)
        named(scheme);
    int applied = 0;
    const auto apply = [&](quant::QuantScheme& scheme) {
        if (auto sized = withGroupSize(scheme, flags.groupSize, kSource, flag)) {
            scheme = std::move(*sized);
            ++applied;
        }
    };
    if (r.global)
        apply(*r.global);
    for (auto& o : r.layerOverrides)
        apply(o.scheme);
    for (auto& [kind, scheme] : r.layerTypeOverrides)
        apply(scheme);
    if (applied == 0) {
        std::vector<std::string> takers;
        for (const quant::SchemeName& s : quant::schemeNames())
            if (s.takesGroupSize)
                takers.push_back(s.name);
        throw Error(kSource, flag,
                    "no scheme of the recipe takes a group size; these names do: " +
                        joinNames(takers) + " (int4_wo_32 and the like name theirs)");
    }
}

// --pre_quantization_optimization in Quark's order, then --quant_algo, in the catalog's stages.
std::vector<AlgorithmSpec> algorithmsFromFlags(const QuantFlags& flags) {
    std::vector<AlgorithmSpec> out;
    for (const std::string& name : preQuantizationOptimizationChoices())
        if (std::find(flags.preQuantOptimizations.begin(), flags.preQuantOptimizations.end(),
                      name) != flags.preQuantOptimizations.end())
            out.push_back(preQuantizationOptimization(name));
    for (const std::string& name : flags.preQuantOptimizations)
        preQuantizationOptimization(name); // refuses unknown names
    const auto& ours = knownAlgorithmNames();
    for (const std::string& quarkName : flags.quantAlgos) {
        if (const std::optional<std::string> name = algorithmFromQuarkName(quarkName))
            out.push_back(quarkName == "quarot" ? preQuantizationOptimization("quarot")
                                                : AlgorithmSpec{*name, nlohmann::json::object()});
        else if (std::find(ours.begin(), ours.end(), quarkName) != ours.end())
            out.push_back({quarkName, nlohmann::json::object()});
        else
            throw Error(kSource, "--quant_algo",
                        "unknown algorithm '" + quarkName + "'; valid: " + joinNames(ours) +
                            ", quarot");
    }
    std::stable_sort(out.begin(), out.end(), [](const AlgorithmSpec& a, const AlgorithmSpec& b) {
        return findAlgorithmInfo(a.name)->stage < findAlgorithmInfo(b.name)->stage;
    });
    for (size_t i = 1; i < out.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (out[i].name == out[j].name)
                throw Error(kSource,
                            flags.preQuantOptimizations.empty() ? "--quant_algo"
                                                                : "--pre_quantization_optimization",
                            "'" + out[i].name +
                                "' is asked twice (--quant_algo and "
                                "--pre_quantization_optimization together name it twice, or "
                                "quarot and rotation are both given)");
    return out;
}

} // namespace

const std::vector<std::string>& preQuantizationOptimizationChoices() {
    static const std::vector<std::string> choices = {"rotation", "quarot", "smoothquant"};
    return choices;
}

AlgorithmSpec preQuantizationOptimization(const std::string& name) {
    if (name == "rotation")
        return {"rotation", nlohmann::json::object()};
    if (name == "quarot")
        return {"rotation", {{"r1", true}, {"r2", true}, {"r4", true}}};
    if (name == "smoothquant")
        return {"smoothquant", nlohmann::json::object()};
    throw Error(kSource, "--pre_quantization_optimization",
                "unknown pre-quantization optimization '" + name +
                    "'; valid: " + joinNames(preQuantizationOptimizationChoices()));
}

const std::vector<std::string>& kvCacheDtypeChoices() {
    static const std::vector<std::string> choices = {"fp8", "none"};
    return choices;
}

Recipe recipeFromFlags(const QuantFlags& flags) {
    Recipe recipe;
    applyFlags(recipe, flags);
    return recipe;
}

void applyFlags(Recipe& recipe, const QuantFlags& flags) {
    Recipe r = recipe;
    if (!flags.quantScheme.empty())
        r.global = schemeFromFlag(flags.quantScheme, "--quant_scheme");
    if (!flags.excludeLayers.empty()) {
        for (const auto& pattern : flags.excludeLayers)
            validateLayerPattern(pattern, kSource, "--exclude_layers");
        r.exclude = flags.excludeLayers;
    }
    if (!flags.layerQuantSchemes.empty()) {
        r.layerOverrides.clear();
        for (const auto& [pattern, scheme] : flags.layerQuantSchemes) {
            validateLayerPattern(pattern, kSource, "--layer_quant_scheme");
            r.layerOverrides.push_back({pattern, schemeFromFlag(scheme, "--layer_quant_scheme")});
        }
    }
    if (flags.kvCacheDtype == "fp8")
        r.kvCache = fp8KvCacheSpec();
    else if (flags.kvCacheDtype == "none")
        r.kvCache.reset();
    else if (!flags.kvCacheDtype.empty())
        throw Error(kSource, "--kv_cache_dtype",
                    "unsupported KV cache type '" + flags.kvCacheDtype +
                        "' (valid: " + joinNames(kvCacheDtypeChoices()) + ")");
    rejectQuarkDatasetName(flags.calibData, kSource, "--dataset");
    if (!flags.calibData.empty())
        r.calibration.dataPath = flags.calibData;
    if (flags.numCalibData != -1) {
        if (!limits::calibrationSamples.allows(flags.numCalibData))
            throw Error(kSource, "--num_calib_data",
                        limits::calibrationSamples.refusal(flags.numCalibData));
        r.calibration.numSamples = flags.numCalibData;
    }
    if (flags.seqLen != -1) {
        if (!limits::calibrationSeqLen.allows(flags.seqLen))
            throw Error(kSource, "--seq_len", limits::calibrationSeqLen.refusal(flags.seqLen));
        r.calibration.seqLen = flags.seqLen;
    }
    if (!flags.calibMode.empty()) {
        const auto mode = calibrationModeFromName(flags.calibMode);
        if (!mode)
            throw Error(kSource, "--calib_mode",
                        "unknown calibration mode '" + flags.calibMode +
                            "' (valid: " + joinNames(knownCalibrationModes()) + ")");
        r.calibration.mode = *mode;
    }
    if (flags.groupSize != -1)
        applyGroupSize(r, flags);
    if (!flags.quantAlgos.empty() || !flags.preQuantOptimizations.empty())
        r.algorithms = algorithmsFromFlags(flags);
    r.validate(kSource);
    recipe = std::move(r);
}

} // namespace qs
