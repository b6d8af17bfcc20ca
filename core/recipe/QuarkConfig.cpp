#include "recipe/QuarkConfig.h"

#include "io/JsonFields.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/LayerPattern.h"
#include "recipe/SchemeJson.h"
#include "util/Error.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace qs {

using nlohmann::json;
using quant::QuantScheme;
using quant::QuantSpec;

namespace {

// Quark's LLM templates name the KV projections like this (kv_layers_name of "llama", "opt", ...).
const std::vector<std::string>& kvGroup() {
    static const std::vector<std::string> group = {"*k_proj", "*v_proj"};
    return group;
}

bool isKvKind(const std::string& kind) {
    return kind == "k_proj" || kind == "v_proj";
}

std::string joinPath(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

json nullLayerConfig() {
    return json{{"weight", nullptr},
                {"input_tensors", nullptr},
                {"output_tensors", nullptr},
                {"bias", nullptr},
                {"target_device", nullptr}};
}

json layerConfig(const std::optional<QuantScheme>& scheme, const std::optional<QuantSpec>& out) {
    json j = scheme ? scheme->toQuarkLayerConfig() : nullLayerConfig();
    if (out)
        j["output_tensors"] = out->toJson();
    return j;
}

bool isNullConfig(const json& j) {
    for (const char* key : {"weight", "input_tensors", "output_tensors", "bias"})
        if (j.contains(key) && !j[key].is_null())
            return false;
    return true;
}

// A key every consumer reads the same way: an exact name, or an fnmatch pattern with '*'
// (vLLM substring-matches keys without '*', so "?" / "[..]"-only patterns would differ).
bool isPortableQuarkKey(const std::string& key) {
    return !isRegexPattern(key) && (isExactLayerName(key) || key.find('*') != std::string::npos);
}

// ---------------------------------------------------------------- export: unambiguous keys

struct Expectation {
    enum Kind { Ignore, MustNotMatch, Config } kind = Ignore;
    json config;
    std::optional<json> fallback; // what the layer gets without any key; nullopt: needs a key
};

class KeyedConfigs {
public:
    void set(const std::string& key, json config, bool portable) {
        auto it = m_index.find(key);
        if (it == m_index.end()) {
            m_index[key] = m_entries.size();
            m_entries.push_back({key, std::move(config), portable});
        } else {
            m_entries[it->second].config = std::move(config);
            m_entries[it->second].portable = portable;
        }
    }
    const json* get(const std::string& key) const {
        auto it = m_index.find(key);
        return it == m_index.end() ? nullptr : &m_entries[it->second].config;
    }

    // Drops every key that some layer would read differently from what it should get and
    // writes those layers under their exact names. Without layer names, keys stay as they are.
    json resolve(const std::vector<std::string>& names,
                 const std::vector<Expectation>& expect) const {
        json out = json::object();
        std::vector<std::string> kept;
        for (const auto& e : m_entries) {
            bool good = e.portable;
            for (size_t i = 0; good && i < names.size(); ++i) {
                if (expect[i].kind == Expectation::Ignore || !matchesLayerPattern(e.key, names[i]))
                    continue;
                good = expect[i].kind == Expectation::Config && expect[i].config == e.config;
            }
            if (good || names.empty()) {
                out[e.key] = e.config;
                kept.push_back(e.key);
            }
        }
        for (size_t i = 0; i < names.size(); ++i) {
            if (expect[i].kind != Expectation::Config)
                continue;
            const bool covered = std::any_of(kept.begin(), kept.end(), [&](const std::string& k) {
                return matchesLayerPattern(k, names[i]);
            });
            if (!covered && (!expect[i].fallback || *expect[i].fallback != expect[i].config))
                out[names[i]] = expect[i].config;
        }
        return out;
    }

private:
    struct Entry {
        std::string key;
        json config;
        bool portable;
    };
    std::vector<Entry> m_entries;
    std::map<std::string, size_t> m_index;
};

// ---------------------------------------------------------------- import helpers

class QuarkReader {
public:
    QuarkReader(const json& qc, std::string source, std::string prefix)
        : m_qc(qc), m_source(std::move(source)), m_prefix(std::move(prefix)) {}

    std::string field(const std::string& key) const { return joinPath(m_prefix, key); }
    const std::string& source() const { return m_source; }
    const json* find(const std::string& key) const {
        auto it = m_qc.find(key);
        return it == m_qc.end() || it->is_null() ? nullptr : &*it;
    }
    const json& objectAt(const std::string& key) const {
        const json* v = find(key);
        static const json empty = json::object();
        if (!v)
            return empty;
        if (!v->is_object())
            throw Error(m_source, field(key),
                        "expected a JSON object, got " + std::string(v->type_name()));
        return *v;
    }
    std::vector<std::string> stringList(const json& v, const std::string& fieldPath) const {
        std::vector<std::string> out;
        if (v.is_null())
            return out;
        if (!v.is_array())
            throw Error(m_source, fieldPath,
                        "expected a list of strings, got " + std::string(v.type_name()));
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_string())
                throw Error(m_source, fieldPath + "[" + std::to_string(i) + "]",
                            "expected a string, got " + std::string(v[i].type_name()));
            out.push_back(v[i].get<std::string>());
        }
        return out;
    }
    // A Quark layer config; nullopt when it quantizes nothing.
    std::optional<QuantScheme> scheme(const json& config, const std::string& fieldPath) const {
        if (!config.is_object())
            throw Error(m_source, fieldPath,
                        "expected a layer config object, got " + std::string(config.type_name()));
        if (isNullConfig(config))
            return std::nullopt;
        QuantScheme s;
        rethrowAtField(m_source, fieldPath,
                       [&] { s = QuantScheme::fromQuarkLayerConfig(config, fieldPath); });
        nameKnownScheme(s);
        return s;
    }
    QuantSpec outputSpec(const json& spec, const std::string& fieldPath) const {
        QuantSpec s;
        rethrowAtField(m_source, fieldPath, [&] {
            s = QuantSpec::fromJson(spec, quant::TensorRole::Output, fieldPath);
        });
        return s;
    }

private:
    const json& m_qc;
    std::string m_source;
    std::string m_prefix;
};

void checkTopLevelKeys(const json& qc, const QuarkReader& r) {
    static const std::set<std::string> known = {"quant_method",
                                                "version",
                                                "global_quant_config",
                                                "layer_quant_config",
                                                "layer_type_quant_config",
                                                "kv_cache_quant_config",
                                                "kv_cache_group",
                                                "kv_cache_post_rope",
                                                "min_kv_scale",
                                                "exclude",
                                                "algo_config",
                                                "softmax_quant_spec",
                                                "quant_mode",
                                                "export",
                                                "shared_scale_groups",
                                                "sync_moe_expert_input_amax",
                                                "keep_prequantized_layers",
                                                "log_severity_level"};
    for (const auto& item : qc.items()) {
        const json& v = item.value();
        const bool empty = v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
                           ((v.is_array() || v.is_object()) && v.empty());
        if (!known.count(item.key()) && !empty)
            throw Error(r.source(), r.field(item.key()),
                        "unknown Quark setting; Quantscope cannot import it");
    }
    auto expectString = [&](const char* key, const std::vector<std::string>& allowed,
                            const std::string& why) {
        const json* v = r.find(key);
        if (!v)
            return;
        if (!v->is_string())
            throw Error(r.source(), r.field(key), "expected a string, got " + v->dump());
        if (std::find(allowed.begin(), allowed.end(), v->get<std::string>()) == allowed.end())
            throw Error(r.source(), r.field(key), "'" + v->get<std::string>() + "' " + why);
    };
    expectString("quant_method", {"quark"},
                 "is not a Quark quantization_config (re-export from Quark with "
                 "custom_mode=\"quark\")");
    expectString("quant_mode", {"eager_mode"}, "is not supported (only eager_mode)");
    if (r.find("softmax_quant_spec"))
        throw Error(r.source(), r.field("softmax_quant_spec"),
                    "attention (softmax) quantization is not supported");
    if (const json* v = r.find("kv_cache_post_rope"); v && *v != json(false))
        throw Error(r.source(), r.field("kv_cache_post_rope"),
                    "post-RoPE KV-cache quantization is not supported (Quantscope quantizes the "
                    "k_proj/v_proj outputs)");
    if (const json* v = r.find("shared_scale_groups"); v && !(v->is_array() && v->empty()))
        throw Error(r.source(), r.field("shared_scale_groups"),
                    "scales shared across layers are not supported");
    if (const json* v = r.find("min_kv_scale"); v && *v != json(0.0) && *v != json(0))
        throw Error(r.source(), r.field("min_kv_scale"),
                    "a KV-cache scale floor is not supported (only 0.0)");
}

std::vector<std::string> readExportBlock(const QuarkReader& r) {
    const json& exp = r.objectAt("export");
    const std::string path = r.field("export");
    std::vector<std::string> group;
    for (const auto& item : exp.items()) {
        const std::string f = joinPath(path, item.key());
        const json& v = item.value();
        if (item.key() == "kv_cache_group") {
            group = r.stringList(v, f);
        } else if (item.key() == "min_kv_scale") {
            if (!v.is_null() && v != json(0.0) && v != json(0))
                throw Error(r.source(), f, "a KV-cache scale floor is not supported (only 0.0)");
        } else if (item.key() == "pack_method") {
            if (!v.is_null() && (!v.is_string() || !quant::packOrderFromName(v.get<std::string>())))
                throw Error(r.source(), f, "expected \"reorder\" or \"order\", got " + v.dump());
        } else if (item.key() == "weight_format") {
            if (!v.is_null() && v != json("real_quantized") && v != json("fake_quantized"))
                throw Error(r.source(), f,
                            "expected \"real_quantized\" or \"fake_quantized\", got " + v.dump());
        } else if (item.key() == "weight_merge_groups") {
            if (!v.is_null() && !(v.is_array() && v.empty()))
                throw Error(r.source(), f, "merged weight scales across layers are not supported");
        } else {
            throw Error(r.source(), f, "unknown key of Quark's export block");
        }
    }
    return group;
}

std::vector<AlgorithmSpec> readAlgorithms(const QuarkReader& r) {
    std::vector<AlgorithmSpec> out;
    const json* v = r.find("algo_config");
    if (!v)
        return out;
    const json list = v->is_array() ? *v : json::array({*v}); // Quark < 0.9 wrote one object
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string f = r.field("algo_config") + "[" + std::to_string(i) + "]";
        const json& item = list[i];
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
            throw Error(r.source(), f, "expected an algorithm object with a \"name\"");
        const std::string quarkName = item["name"].get<std::string>();
        const auto name = algorithmFromQuarkName(quarkName);
        if (!name)
            throw Error(r.source(), f + ".name",
                        "Quark algorithm '" + quarkName + "' is not supported (supported: " +
                            joinNames(knownAlgorithmNames()) + ")");
        AlgorithmSpec a;
        a.name = *name;
        for (const auto& p : item.items()) {
            // GQA head counts were dropped by Quark itself; "random" became random_r1/_r2.
            if (p.key() == "name" || p.key() == "num_attention_heads" ||
                p.key() == "num_key_value_heads")
                continue;
            if (p.key() == "random") {
                a.params["random_r1"] = p.value();
                a.params["random_r2"] = p.value();
                continue;
            }
            if (quarkName == "quarot" && p.key() == "optimized_rotation_path")
                continue;
            a.params[p.key()] = p.value();
        }
        if (quarkName == "quarot")
            for (const char* key : {"r1", "r2", "r3", "r4"})
                if (!a.params.contains(key))
                    a.params[key] = true;
        validateAlgorithmParams(a.name, a.params, r.source(), f);
        out.push_back(std::move(a));
    }
    return out;
}

// Patterns from least to most specific (exact names last): with the recipe's last-match rule
// the most specific key wins, which is what a Quark user listing overrides means in practice.
void sortBySpecificity(std::vector<LayerOverride>& overrides) {
    auto literalChars = [](const std::string& p) {
        return std::count_if(p.begin(), p.end(), [](char c) { return c != '*' && c != '?'; });
    };
    std::stable_sort(overrides.begin(), overrides.end(),
                     [&](const LayerOverride& a, const LayerOverride& b) {
                         const bool ea = isExactLayerName(a.pattern);
                         const bool eb = isExactLayerName(b.pattern);
                         if (ea != eb)
                             return !ea;
                         const auto la = literalChars(a.pattern), lb = literalChars(b.pattern);
                         if (la != lb)
                             return la < lb;
                         return a.pattern < b.pattern;
                     });
}

bool isKvGroupKey(const std::string& key, const std::vector<std::string>& group) {
    for (const auto& g : group)
        if (key == g || matchesLayerPattern(g, key))
            return true;
    return false;
}

std::string kvKindOfKey(const std::string& key) {
    auto endsWith = [&](const char* s) {
        const std::string suffix(s);
        return key.size() >= suffix.size() &&
               key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return endsWith("k_proj") ? "k_proj" : endsWith("v_proj") ? "v_proj" : "";
}

// Layer names of the families we load, used to tell whether a pattern reaches k/v projections.
std::vector<std::string> sampleNames(const std::string& kind) {
    return {"model.layers.0.self_attn." + kind, "model.decoder.layers.0.self_attn." + kind};
}

} // namespace

// ================================================================ import

Recipe recipeFromQuarkConfig(const json& config, const std::string& source) {
    if (!config.is_object())
        throw Error(source, "", "expected a JSON object");
    const bool wrapped = config.contains("quantization_config");
    const json& qc = wrapped ? config["quantization_config"] : config;
    if (!qc.is_object())
        throw Error(source, "quantization_config", "expected a JSON object");
    const QuarkReader r(qc, source, wrapped ? "quantization_config" : "");
    checkTopLevelKeys(qc, r);

    Recipe recipe;
    if (!r.find("global_quant_config"))
        throw Error(source, r.field("global_quant_config"), "missing");
    recipe.global = r.scheme(*r.find("global_quant_config"), r.field("global_quant_config"));
    for (const auto& item : r.objectAt("layer_type_quant_config").items()) {
        const std::string f = joinPath(r.field("layer_type_quant_config"), item.key());
        if (item.key() != "Linear")
            throw Error(source, f,
                        "only Linear layers are quantized; per-type configs for '" + item.key() +
                            "' are not supported");
        // Every layer we quantize is a Linear, so its type config takes the global's place.
        recipe.global = r.scheme(item.value(), f);
    }

    // The KV-cache group and spec (vLLM's rule: the output_tensors of the layer configs whose
    // names match the group, all equal).
    std::vector<std::string> group = readExportBlock(r);
    if (const json* g = r.find("kv_cache_group"))
        for (const auto& p : r.stringList(*g, r.field("kv_cache_group")))
            if (std::find(group.begin(), group.end(), p) == group.end())
                group.push_back(p);
    const json& kvConfigs = r.objectAt("kv_cache_quant_config");
    for (const auto& item : kvConfigs.items())
        if (std::find(group.begin(), group.end(), item.key()) == group.end())
            group.push_back(item.key());
    for (size_t i = 0; i < group.size(); ++i) {
        // A key ending in k_proj / v_proj can only reach names that end that way.
        if (kvKindOfKey(group[i]).empty())
            throw Error(
                source, r.field("export.kv_cache_group"),
                "KV-cache group '" + group[i] +
                    "' is not supported (only k_proj and v_proj outputs, e.g. \"*k_proj\")");
    }
    std::optional<QuantSpec> kv;
    std::string kvField;
    auto takeKv = [&](const json& layerCfg, const std::string& f) {
        if (!layerCfg.is_object() || !layerCfg.contains("output_tensors") ||
            layerCfg["output_tensors"].is_null())
            return;
        const QuantSpec spec = r.outputSpec(layerCfg["output_tensors"], f + ".output_tensors");
        if (kv && *kv != spec)
            throw Error(source, f + ".output_tensors",
                        "KV-cache specs differ between layers (this one vs " + kvField + ")");
        kv = spec;
        kvField = f;
    };
    const json& lqc = r.objectAt("layer_quant_config");
    for (const auto& item : lqc.items())
        if (isKvGroupKey(item.key(), group))
            takeKv(item.value(), joinPath(r.field("layer_quant_config"), item.key()));
    for (const auto& item : kvConfigs.items())
        takeKv(item.value(), joinPath(r.field("kv_cache_quant_config"), item.key()));
    if (!group.empty() && !kv)
        throw Error(source, r.field("export.kv_cache_group"),
                    "a KV-cache group is set but no matching layer config has output_tensors");
    bool hasK = false, hasV = false;
    for (const auto& g : group) {
        hasK = hasK || kvKindOfKey(g) == "k_proj";
        hasV = hasV || kvKindOfKey(g) == "v_proj";
    }
    if (kv && !(hasK && hasV))
        throw Error(source, r.field("export.kv_cache_group"),
                    "the KV-cache group must cover both k_proj and v_proj");
    recipe.kvCache = kv;

    // Layer configs: "*.<kind>" keys are layer-type overrides (what quarkConfigFromRecipe
    // writes for them), the rest are pattern overrides; a config that quantizes nothing
    // excludes its layers, as in Quark.
    static const std::regex typeKey(R"(^\*\.([A-Za-z0-9_]+)$)");
    std::vector<std::pair<std::string, QuantScheme>> kvEntries;
    for (const auto& item : lqc.items()) {
        const std::string f = joinPath(r.field("layer_quant_config"), item.key());
        json cfg = item.value();
        const bool kvKey = isKvGroupKey(item.key(), group);
        if (kvKey && cfg.is_object())
            cfg["output_tensors"] = nullptr;
        const auto scheme = r.scheme(cfg, f);
        std::smatch m;
        if (!scheme) {
            if (!kvKey && std::find(recipe.exclude.begin(), recipe.exclude.end(), item.key()) ==
                              recipe.exclude.end())
                recipe.exclude.push_back(item.key());
        } else if (std::regex_match(item.key(), m, typeKey)) {
            recipe.layerTypeOverrides[m[1].str()] = *scheme;
        } else if (kvKey) {
            kvEntries.emplace_back(item.key(), *scheme);
        } else {
            recipe.layerOverrides.push_back({item.key(), *scheme});
        }
    }
    // Quark's template writes the KV projections' own scheme next to the KV spec; drop that
    // copy when it only restates what the layers get anyway and nothing else could claim them.
    for (const auto& [key, scheme] : kvEntries) {
        const std::string kind = kvKindOfKey(key);
        auto type = recipe.layerTypeOverrides.find(kind);
        const std::optional<QuantScheme> baseline = type != recipe.layerTypeOverrides.end()
                                                        ? std::optional<QuantScheme>(type->second)
                                                        : recipe.global;
        const std::vector<std::string> reached =
            isExactLayerName(key) ? std::vector<std::string>{key} : sampleNames(kind);
        bool contested = false;
        for (const auto& o : recipe.layerOverrides)
            for (const auto& name : reached)
                contested = contested || matchesLayerPattern(o.pattern, name);
        if (!(baseline && *baseline == scheme && !contested))
            recipe.layerOverrides.push_back({key, scheme});
    }
    sortBySpecificity(recipe.layerOverrides);

    if (const json* ex = r.find("exclude"))
        for (const auto& p : r.stringList(*ex, r.field("exclude")))
            if (std::find(recipe.exclude.begin(), recipe.exclude.end(), p) == recipe.exclude.end())
                recipe.exclude.push_back(p);
    for (size_t i = 0; i < recipe.exclude.size(); ++i)
        validateLayerPattern(recipe.exclude[i], source,
                             r.field("exclude") + "[" + std::to_string(i) + "]");

    recipe.algorithms = readAlgorithms(r);
    recipe.validate(source);
    return recipe;
}

Recipe recipeFromQuarkConfigFile(const std::string& configJsonPath) {
    return recipeFromQuarkConfig(parseJsonText(readTextFile(configJsonPath), configJsonPath),
                                 configJsonPath);
}

// ================================================================ export

json quarkConfigFromRecipe(const Recipe& recipe, const std::vector<std::string>& layerNames,
                           const QuarkExportOptions& options) {
    const std::string source = "recipe";
    recipe.validate(source);
    if (options.weightFormat != "real_quantized" && options.weightFormat != "fake_quantized")
        throw Error("Quark export", "weight_format",
                    "expected real_quantized or fake_quantized, got '" + options.weightFormat +
                        "'");
    const bool haveNames = !layerNames.empty();
    const std::optional<QuantSpec>& kv = recipe.kvCache;

    // Candidate layer_quant_config keys in increasing precedence; later ones replace earlier
    // ones with the same key.
    KeyedConfigs lqc;
    for (const auto& [kind, scheme] : recipe.layerTypeOverrides)
        lqc.set("*." + kind, layerConfig(scheme, isKvKind(kind) ? kv : std::nullopt), true);
    for (size_t i = 0; i < recipe.layerOverrides.size(); ++i) {
        const auto& o = recipe.layerOverrides[i];
        const bool portable = isPortableQuarkKey(o.pattern);
        if (!portable && !haveNames)
            throw Error(source, "layer_overrides[" + std::to_string(i) + "].pattern",
                        "Quark configs have no regex or '?'/'[...]'-only layer keys; pass the "
                        "model's layer names so it is written as exact names");
        lqc.set(o.pattern, layerConfig(o.scheme, std::nullopt), portable);
    }
    if (kv) {
        for (const auto& g : kvGroup()) {
            json cfg;
            if (const json* existing = lqc.get(g)) {
                cfg = *existing;
                cfg["output_tensors"] = kv->toJson();
            } else {
                const std::string kind = g.substr(1);
                auto type = recipe.layerTypeOverrides.find(kind);
                cfg = layerConfig(type != recipe.layerTypeOverrides.end()
                                      ? std::optional<QuantScheme>(type->second)
                                      : recipe.global,
                                  kv);
            }
            lqc.set(g, std::move(cfg), true);
        }
    }

    const json globalConfig = layerConfig(recipe.global, std::nullopt);
    std::vector<Expectation> layerExpect(layerNames.size());
    std::vector<Expectation> kvExpect(layerNames.size());
    json exclude = json::array();
    for (size_t i = 0; i < layerNames.size(); ++i) {
        const std::string& name = layerNames[i];
        const std::string kind = layerKindOf(name);
        const auto scheme = recipe.schemeFor(name, kind);
        const auto out = recipe.kvOutputFor(name, kind);
        if (scheme) {
            layerExpect[i] = {Expectation::Config, layerConfig(scheme, out),
                              out ? std::nullopt : std::optional<json>(globalConfig)};
        } else {
            exclude.push_back(name);
        }
        if (out)
            kvExpect[i] = {Expectation::Config, layerConfig(scheme, out), std::nullopt};
        else
            kvExpect[i].kind = Expectation::MustNotMatch;
    }
    // Original exclusions consumers can still use: "re:" (vLLM), and exact names or wildcards
    // that reach layers outside `layerNames` (Quark applies fnmatch itself).
    for (const auto& p : recipe.exclude) {
        const bool matchesGiven =
            std::any_of(layerNames.begin(), layerNames.end(),
                        [&](const auto& n) { return matchesLayerPattern(p, n); });
        if (!haveNames || isRegexPattern(p) || !matchesGiven)
            if (std::find(exclude.begin(), exclude.end(), json(p)) == exclude.end())
                exclude.push_back(p);
    }

    json qc;
    qc["quant_method"] = "quark";
    qc["version"] = options.quarkVersion;
    qc["quant_mode"] = "eager_mode";
    qc["global_quant_config"] = globalConfig;
    qc["layer_quant_config"] = lqc.resolve(layerNames, layerExpect);
    qc["layer_type_quant_config"] = json::object();
    json kvConfigs = json::object();
    if (kv) {
        KeyedConfigs kvc;
        for (const auto& g : kvGroup())
            kvc.set(g, *lqc.get(g), true);
        kvConfigs = kvc.resolve(layerNames, kvExpect);
    }
    qc["kv_cache_quant_config"] = kvConfigs;
    qc["kv_cache_post_rope"] = false;
    qc["softmax_quant_spec"] = nullptr;
    qc["exclude"] = exclude;
    json algos = json::array();
    for (const auto& a : recipe.algorithms) {
        json item = a.params;
        item["name"] = quarkAlgorithmName(a.name);
        algos.push_back(std::move(item));
    }
    qc["algo_config"] = algos.empty() ? json(nullptr) : algos;
    const json group = kv ? json(kvGroup()) : json::array();
    if (kv)
        qc["kv_cache_group"] = group;
    qc["export"] = {{"kv_cache_group", group},
                    {"min_kv_scale", 0.0},
                    {"pack_method", quant::packOrderName(options.packMethod)},
                    {"weight_format", options.weightFormat},
                    {"weight_merge_groups", nullptr}};
    return qc;
}

} // namespace qs
