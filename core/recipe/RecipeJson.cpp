// Recipe <-> JSON. Parsing checks structure and JSON types (naming the field path); the value
// checks live in Recipe::validate so recipes built in code get the same messages.
#include "recipe/Recipe.h"

#include "recipe/SchemeJson.h"
#include "util/Error.h"

#include <initializer_list>
#include <limits>

namespace qs {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string joinPath(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

std::string indexPath(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
}

// Strict access to one JSON object of the recipe at `path` (the field path of the object).
class ObjectReader {
public:
    ObjectReader(const json& object, const std::string& source, std::string path)
        : m_object(object), m_source(source), m_path(std::move(path)) {
        if (!m_object.is_object())
            throw Error(m_source, m_path,
                        "expected a JSON object, got " + std::string(m_object.type_name()));
    }

    void allowOnly(std::initializer_list<const char*> keys) const {
        for (const auto& item : m_object.items()) {
            bool known = false;
            for (const char* k : keys)
                known = known || item.key() == k;
            if (!known) {
                std::string list;
                for (const char* k : keys)
                    list += (list.empty() ? "" : ", ") + std::string(k);
                throw Error(m_source, field(item.key()), "unknown key (known: " + list + ")");
            }
        }
    }

    // nullptr when absent or null.
    const json* find(const char* key) const {
        auto it = m_object.find(key);
        return it == m_object.end() || it->is_null() ? nullptr : &*it;
    }
    std::string field(const std::string& key) const { return joinPath(m_path, key); }

    std::string string(const char* key, const std::string& fallback) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_string())
            throw Error(m_source, field(key),
                        "expected a string, got " + std::string(v->type_name()));
        return v->get<std::string>();
    }

    int64_t integer(const char* key, int64_t fallback) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_number_integer())
            throw Error(m_source, field(key),
                        "expected an integer, got " +
                            (v->is_number() ? v->dump() : std::string(v->type_name())));
        if (v->is_number_unsigned() &&
            v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
            throw Error(m_source, field(key), "integer out of range");
        return v->get<int64_t>();
    }

    uint64_t unsignedInteger(const char* key, uint64_t fallback) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_number_integer())
            throw Error(m_source, field(key),
                        "expected a non-negative integer, got " +
                            (v->is_number() ? v->dump() : std::string(v->type_name())));
        if (!v->is_number_unsigned())
            throw Error(m_source, field(key), "must not be negative, got " + v->dump());
        return v->get<uint64_t>();
    }

    std::vector<std::string> stringList(const char* key) const {
        std::vector<std::string> out;
        const json* v = find(key);
        if (!v)
            return out;
        if (!v->is_array())
            throw Error(m_source, field(key),
                        "expected a list of strings, got " + std::string(v->type_name()));
        for (size_t i = 0; i < v->size(); ++i) {
            if (!(*v)[i].is_string())
                throw Error(m_source, indexPath(field(key), i),
                            "expected a string, got " + std::string((*v)[i].type_name()));
            out.push_back((*v)[i].get<std::string>());
        }
        return out;
    }

    const json& object() const { return m_object; }

private:
    const json& m_object;
    const std::string& m_source;
    std::string m_path;
};

void readFormat(const ObjectReader& root, const std::string& source) {
    const json* format = root.find("format");
    if (!format) {
        const bool looksLikeQuark = root.object().contains("quantization_config") ||
                                    root.object().contains("global_quant_config");
        throw Error(source, "format",
                    std::string("missing; a recipe starts with \"format\": \"") +
                        Recipe::kFormatName + "\"" +
                        (looksLikeQuark ? " (this looks like a Quark quantization_config: import "
                                          "it as a Quark config instead)"
                                        : ""));
    }
    if (!format->is_string() || format->get<std::string>() != Recipe::kFormatName)
        throw Error(source, "format",
                    "expected \"" + std::string(Recipe::kFormatName) + "\", got " + format->dump());
    const json* version = root.find("version");
    if (!version)
        throw Error(source, "version", "missing");
    if (!version->is_number_integer())
        throw Error(source, "version", "expected an integer, got " + version->dump());
    const int64_t v = version->get<int64_t>();
    if (v > Recipe::kFormatVersion)
        throw Error(source, "version",
                    "recipe format version " + std::to_string(v) +
                        " was written by a newer Quantscope; this build reads up to version " +
                        std::to_string(Recipe::kFormatVersion));
    if (v < 1)
        throw Error(source, "version", "invalid version " + std::to_string(v));
}

} // namespace

ordered_json Recipe::toOrderedJson() const {
    ordered_json j;
    j["format"] = kFormatName;
    j["version"] = kFormatVersion;
    j["global"] = global ? ordered_json(schemeToRecipeJson(*global)) : ordered_json(nullptr);

    ordered_json overrides = ordered_json::array();
    for (const auto& o : layerOverrides) {
        ordered_json item;
        item["pattern"] = o.pattern;
        item["scheme"] = ordered_json(schemeToRecipeJson(o.scheme));
        overrides.push_back(std::move(item));
    }
    j["layer_overrides"] = std::move(overrides);

    ordered_json types = ordered_json::object();
    for (const auto& [kind, scheme] : layerTypeOverrides)
        types[kind] = ordered_json(schemeToRecipeJson(scheme));
    j["layer_type_overrides"] = std::move(types);

    j["exclude"] = exclude;
    j["kv_cache"] = kvCache ? ordered_json(kvSpecToRecipeJson(*kvCache)) : ordered_json(nullptr);

    ordered_json algos = ordered_json::array();
    for (const auto& a : algorithms) {
        ordered_json item;
        item["name"] = a.name;
        for (const auto& p : a.params.items())
            item[p.key()] = ordered_json(p.value());
        algos.push_back(std::move(item));
    }
    j["algorithms"] = std::move(algos);

    ordered_json calib;
    calib["data"] = calibration.dataPath;
    calib["num_samples"] = calibration.numSamples;
    calib["seq_len"] = calibration.seqLen;
    calib["seed"] = calibration.seed;
    calib["mode"] = calibrationModeName(calibration.mode);
    j["calibration"] = std::move(calib);

    ordered_json eval;
    eval["data"] = evaluation.dataPath;
    eval["seq_len"] = evaluation.seqLen;
    eval["max_windows"] = evaluation.maxWindows;
    j["evaluation"] = std::move(eval);

    j["export_targets"] = exportTargets;
    j["unfit_policy"] = unfitPolicy;

    ordered_json prov;
    prov["model_config_hash"] = provenance.modelConfigHash;
    prov["tool_version"] = provenance.toolVersion;
    prov["created_at"] = provenance.createdAt;
    prov["model_path"] = provenance.modelPath;
    prov["device"] = provenance.device;
    prov["dtype"] = provenance.dtype;
    j["provenance"] = std::move(prov);
    return j;
}

json Recipe::toJson() const {
    return json(toOrderedJson());
}

Recipe Recipe::fromJson(const json& j, const std::string& source) {
    const ObjectReader root(j, source, "");
    readFormat(root, source);
    root.allowOnly({"format", "version", "global", "layer_overrides", "layer_type_overrides",
                    "exclude", "kv_cache", "algorithms", "calibration", "evaluation",
                    "export_targets", "unfit_policy", "provenance"});

    Recipe r;
    if (const json* g = root.find("global"))
        r.global = schemeFromRecipeJson(*g, source, "global");

    if (const json* list = root.find("layer_overrides")) {
        if (!list->is_array())
            throw Error(source, "layer_overrides",
                        "expected a list of {\"pattern\", \"scheme\"} objects, got " +
                            std::string(list->type_name()));
        for (size_t i = 0; i < list->size(); ++i) {
            const std::string path = indexPath("layer_overrides", i);
            const ObjectReader item((*list)[i], source, path);
            item.allowOnly({"pattern", "scheme"});
            LayerOverride o;
            if (!item.find("pattern"))
                throw Error(source, item.field("pattern"), "missing");
            o.pattern = item.string("pattern", "");
            const json* scheme = item.find("scheme");
            if (!scheme)
                throw Error(source, item.field("scheme"), "missing");
            o.scheme = schemeFromRecipeJson(*scheme, source, item.field("scheme"));
            r.layerOverrides.push_back(std::move(o));
        }
    }

    if (const json* types = root.find("layer_type_overrides")) {
        const ObjectReader obj(*types, source, "layer_type_overrides");
        for (const auto& item : types->items())
            r.layerTypeOverrides[item.key()] =
                schemeFromRecipeJson(item.value(), source, obj.field(item.key()));
    }

    r.exclude = root.stringList("exclude");
    if (const json* kv = root.find("kv_cache"))
        r.kvCache = kvSpecFromRecipeJson(*kv, source, "kv_cache");

    if (const json* list = root.find("algorithms")) {
        if (!list->is_array())
            throw Error(source, "algorithms",
                        "expected a list of algorithm objects, got " +
                            std::string(list->type_name()));
        for (size_t i = 0; i < list->size(); ++i) {
            const std::string path = indexPath("algorithms", i);
            const ObjectReader item((*list)[i], source, path);
            if (!item.find("name"))
                throw Error(source, item.field("name"), "missing");
            AlgorithmSpec a;
            a.name = item.string("name", "");
            for (const auto& p : item.object().items())
                if (p.key() != "name")
                    a.params[p.key()] = p.value();
            r.algorithms.push_back(std::move(a));
        }
    }

    if (const json* c = root.find("calibration")) {
        const ObjectReader calib(*c, source, "calibration");
        calib.allowOnly({"data", "num_samples", "seq_len", "seed", "mode"});
        r.calibration.dataPath = calib.string("data", "");
        r.calibration.numSamples = calib.integer("num_samples", r.calibration.numSamples);
        r.calibration.seqLen = calib.integer("seq_len", r.calibration.seqLen);
        r.calibration.seed = calib.unsignedInteger("seed", r.calibration.seed);
        const std::string mode = calib.string("mode", "float");
        const auto parsed = calibrationModeFromName(mode);
        if (!parsed)
            throw Error(source, calib.field("mode"),
                        "unknown calibration mode '" + mode + "' (known: float, sequential)");
        r.calibration.mode = *parsed;
    }
    if (const json* e = root.find("evaluation")) {
        const ObjectReader eval(*e, source, "evaluation");
        eval.allowOnly({"data", "seq_len", "max_windows"});
        r.evaluation.dataPath = eval.string("data", "");
        r.evaluation.seqLen = eval.integer("seq_len", 0);
        r.evaluation.maxWindows = eval.integer("max_windows", 0);
    }
    r.exportTargets = root.stringList("export_targets");
    r.unfitPolicy = root.string("unfit_policy", r.unfitPolicy);
    if (const json* p = root.find("provenance")) {
        const ObjectReader prov(*p, source, "provenance");
        prov.allowOnly(
            {"model_config_hash", "tool_version", "created_at", "model_path", "device", "dtype"});
        r.provenance.modelConfigHash = prov.string("model_config_hash", "");
        r.provenance.toolVersion = prov.string("tool_version", "");
        r.provenance.createdAt = prov.string("created_at", "");
        r.provenance.modelPath = prov.string("model_path", "");
        r.provenance.device = prov.string("device", "");
        r.provenance.dtype = prov.string("dtype", "");
    }
    r.validate(source);
    return r;
}

} // namespace qs
