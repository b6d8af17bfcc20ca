#include "recipe/Recipe.h"

#include "io/JsonFields.h"
#include "quant/SchemeRegistry.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/LayerPattern.h"
#include "recipe/RecipeLimits.h"
#include "recipe/SchemeJson.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace qs {

namespace {

bool isKvKind(const std::string& kind) {
    return kind == "k_proj" || kind == "v_proj";
}

bool isKindName(const std::string& kind) {
    if (kind.empty())
        return false;
    for (char c : kind)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
            return false;
    return true;
}

bool isSha256Hex(const std::string& s) {
    if (s.size() != 64)
        return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

void validateScheme(const quant::QuantScheme& scheme, const std::string& source,
                    const std::string& field) {
    rethrowAtField(source, field, [&] { scheme.validate(field); });
}

} // namespace

quant::QuantSpec fp8KvCacheSpec() {
    return quant::QuantSpec::defaults(quant::DataType::Fp8E4M3);
}

bool nameKnownScheme(quant::QuantScheme& scheme) {
    for (const auto& entry : quant::schemeNames()) {
        if (entry.legacy)
            continue;
        const quant::QuantScheme known = quant::resolveScheme(entry.name);
        if (known == scheme) {
            scheme.name = known.name;
            scheme.description = known.description;
            return true;
        }
    }
    return false;
}

// ---- resolution ----

bool Recipe::isExcluded(const std::string& layerName) const {
    for (const auto& pattern : exclude)
        if (matchesLayerPattern(pattern, layerName))
            return true;
    return false;
}

std::optional<quant::QuantScheme> Recipe::schemeFor(const std::string& layerName,
                                                    const std::string& kind) const {
    if (isExcluded(layerName))
        return std::nullopt;
    for (auto it = layerOverrides.rbegin(); it != layerOverrides.rend(); ++it)
        if (matchesLayerPattern(it->pattern, layerName))
            return it->scheme;
    auto type = layerTypeOverrides.find(kind);
    if (type != layerTypeOverrides.end())
        return type->second;
    return global;
}

std::optional<quant::QuantSpec> Recipe::kvOutputFor(const std::string& /*layerName*/,
                                                    const std::string& kind) const {
    if (!kvCache || !isKvKind(kind))
        return std::nullopt;
    return kvCache;
}

// ---- validation ----

const std::vector<std::string>& Recipe::knownExportTargets() {
    static const std::vector<std::string> targets = {"hf_fake", "quark", "awq", "gguf", "onnx"};
    return targets;
}

const std::vector<std::string>& Recipe::knownUnfitPolicies() {
    static const std::vector<std::string> policies = {"error", "skip"};
    return policies;
}

void Recipe::validate(const std::string& source) const {
    if (global)
        validateScheme(*global, source, "global");
    for (size_t i = 0; i < layerOverrides.size(); ++i) {
        const std::string field = "layer_overrides[" + std::to_string(i) + "]";
        validateLayerPattern(layerOverrides[i].pattern, source, field + ".pattern");
        validateScheme(layerOverrides[i].scheme, source, field + ".scheme");
    }
    for (const auto& [kind, scheme] : layerTypeOverrides) {
        const std::string field = "layer_type_overrides." + kind;
        if (!isKindName(kind))
            throw Error(source, field,
                        "a layer kind is the last part of a layer name (letters, digits, '_'), "
                        "e.g. \"down_proj\"; use layer_overrides for patterns");
        validateScheme(scheme, source, field);
    }
    for (size_t i = 0; i < exclude.size(); ++i)
        validateLayerPattern(exclude[i], source, "exclude[" + std::to_string(i) + "]");
    if (kvCache)
        rethrowAtField(source, "kv_cache", [&] { kvCache->validate("kv_cache"); });

    std::set<std::string> seenAlgorithms;
    for (size_t i = 0; i < algorithms.size(); ++i) {
        const std::string field = "algorithms[" + std::to_string(i) + "]";
        validateAlgorithmParams(algorithms[i].name, algorithms[i].params, source, field);
        if (!seenAlgorithms.insert(algorithms[i].name).second)
            throw Error(source, field + ".name",
                        "algorithm '" + algorithms[i].name + "' is listed twice");
    }

    limits::calibrationSamples.check(calibration.numSamples, source);
    limits::calibrationSeqLen.check(calibration.seqLen, source);
    limits::evaluationSeqLen.check(evaluation.seqLen, source);
    limits::evaluationMaxWindows.check(evaluation.maxWindows, source);

    std::set<std::string> seenTargets;
    const auto& targets = knownExportTargets();
    for (size_t i = 0; i < exportTargets.size(); ++i) {
        const std::string field = "export_targets[" + std::to_string(i) + "]";
        if (std::find(targets.begin(), targets.end(), exportTargets[i]) == targets.end())
            throw Error(source, field,
                        "unknown export target '" + exportTargets[i] +
                            "' (known: " + joinNames(targets) + ")");
        if (!seenTargets.insert(exportTargets[i]).second)
            throw Error(source, field, "export target '" + exportTargets[i] + "' is listed twice");
    }
    const auto& policies = knownUnfitPolicies();
    if (std::find(policies.begin(), policies.end(), unfitPolicy) == policies.end())
        throw Error(source, "unfit_policy",
                    "unknown policy '" + unfitPolicy + "' (known: " + joinNames(policies) + ")");
    if (!provenance.modelConfigHash.empty() && !isSha256Hex(provenance.modelConfigHash))
        throw Error(source, "provenance.model_config_hash",
                    "expected 64 lowercase hex digits (SHA-256)");
}

// ---- files ----

Recipe Recipe::load(const std::string& path) {
    return fromJson(parseJsonText(readTextFile(path), path), path);
}

void Recipe::save(const std::string& path) const {
    validate(path);
    writeFileAtomically(path, toOrderedJson().dump(2) + "\n");
}

bool Recipe::operator==(const Recipe& o) const {
    return global == o.global && layerOverrides == o.layerOverrides &&
           layerTypeOverrides == o.layerTypeOverrides && exclude == o.exclude &&
           kvCache == o.kvCache && algorithms == o.algorithms && calibration == o.calibration &&
           evaluation == o.evaluation && exportTargets == o.exportTargets &&
           unfitPolicy == o.unfitPolicy && provenance == o.provenance;
}

std::string calibrationModeName(CalibrationMode mode) {
    return mode == CalibrationMode::Sequential ? "sequential" : "float";
}

std::optional<CalibrationMode> calibrationModeFromName(const std::string& name) {
    if (name == "float")
        return CalibrationMode::Float;
    if (name == "sequential")
        return CalibrationMode::Sequential;
    return std::nullopt;
}

const std::vector<std::string>& knownCalibrationModes() {
    static const std::vector<std::string> modes = {"float", "sequential"};
    return modes;
}

} // namespace qs
