#include "recipe/RecipeFlags.h"

#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "recipe/RecipeLimits.h"
#include "recipe/SchemeJson.h"
#include "util/Error.h"

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

} // namespace

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
    r.validate(kSource);
    recipe = std::move(r);
}

} // namespace qs
