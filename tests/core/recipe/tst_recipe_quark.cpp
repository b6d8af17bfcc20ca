// Quark quantization_config import/export, the CLI flag mapping and provenance.
// The Quark fixtures follow what Quark's exporter writes (QConfig.to_dict() + the "export"
// block; quark/torch/quantization/config/config.py, quark/torch/export/api.py). Exported
// configs are checked by re-implementing, here, how Quark (model_transformation.py
// setup_config_per_layer) and vLLM (quark.py _find_matched_config, utils.py should_ignore_layer,
// QuarkConfig.from_config) pick a layer's config, so the checks do not go through the reader.
#include "TestMain.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"
#include "recipe/QuarkConfig.h"
#include "recipe/Recipe.h"
#include "recipe/RecipeFlags.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QDateTime>
#include <QtTest>

#include <regex>

using namespace qs;
using nlohmann::json;

namespace {

quant::QuantScheme scheme(const char* name) {
    return quant::resolveScheme(name);
}

json int4G128Spec() {
    return json::parse(
        "{\"ch_axis\": -1, \"dtype\": \"int4\", \"group_size\": 128,"
        " \"is_dynamic\": false, \"is_scale_quant\": false, \"mx_element_dtype\": null,"
        " \"observer_cls\": \"PerGroupMinMaxObserver\", \"qscheme\": \"per_group\","
        " \"round_method\": \"half_even\", \"scale_calculation_mode\": null, \"scale_format\": "
        "null,"
        " \"scale_type\": \"float\", \"symmetric\": true}");
}

json fp8Spec() {
    return json::parse(
        "{\"ch_axis\": null, \"dtype\": \"fp8_e4m3\", \"group_size\": null,"
        " \"is_dynamic\": false, \"is_scale_quant\": false, \"mx_element_dtype\": null,"
        " \"observer_cls\": \"PerTensorMinMaxObserver\", \"qscheme\": \"per_tensor\","
        " \"round_method\": \"half_even\", \"scale_calculation_mode\": null, \"scale_format\": "
        "null,"
        " \"scale_type\": \"float\", \"symmetric\": null}");
}

json layer(const json& weight, const json& input, const json& output) {
    return json{{"bias", nullptr},
                {"input_tensors", input},
                {"output_tensors", output},
                {"target_device", nullptr},
                {"weight", weight}};
}

json exportBlock(const json& kvGroup) {
    return json{{"kv_cache_group", kvGroup},
                {"min_kv_scale", 0.0},
                {"pack_method", "reorder"},
                {"weight_format", "real_quantized"},
                {"weight_merge_groups", nullptr}};
}

// config.json of a Llama exported by Quark with --quant_scheme int4_wo_128 --exclude_layers lm_head
json quarkInt4Config() {
    json qc;
    qc["algo_config"] = nullptr;
    qc["exclude"] = {"lm_head"};
    qc["export"] = exportBlock(json::array());
    qc["global_quant_config"] = layer(int4G128Spec(), nullptr, nullptr);
    qc["kv_cache_post_rope"] = false;
    qc["kv_cache_quant_config"] = json::object();
    qc["layer_quant_config"] = json::object();
    qc["layer_type_quant_config"] = json::object();
    qc["quant_method"] = "quark";
    qc["quant_mode"] = "eager_mode";
    qc["softmax_quant_spec"] = nullptr;
    qc["version"] = "0.10+82f969537f";
    return json{{"architectures", {"LlamaForCausalLM"}},
                {"hidden_size", 64},
                {"model_type", "llama"},
                {"num_hidden_layers", 2},
                {"quantization_config", qc},
                {"torch_dtype", "bfloat16"}};
}

// ... with --quant_scheme fp8 --kv_cache_dtype fp8 (LLMTemplate._set_kv_cache_config).
json quarkFp8KvConfig() {
    json config = quarkInt4Config();
    json& qc = config["quantization_config"];
    qc["global_quant_config"] = layer(fp8Spec(), fp8Spec(), nullptr);
    const json kvLayer = layer(fp8Spec(), fp8Spec(), fp8Spec());
    qc["layer_quant_config"] = {{"*k_proj", kvLayer}, {"*v_proj", kvLayer}};
    qc["kv_cache_quant_config"] = {{"*k_proj", kvLayer}, {"*v_proj", kvLayer}};
    qc["export"] = exportBlock({"*k_proj", "*v_proj"});
    return config;
}

std::vector<std::string> llamaLayers(int blocks) {
    std::vector<std::string> names;
    for (int i = 0; i < blocks; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (const char* s : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                              "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
            names.push_back(p + s);
    }
    names.push_back("lm_head");
    return names;
}

bool hasGlobMeta(const std::string& p) {
    return p.find_first_of("*?[") != std::string::npos;
}

// Quark's setup_config_per_layer: exclude (exact, then fnmatch), exact layer key, fnmatch keys,
// global. Any order of the fnmatch keys must give the same answer.
std::optional<json> quarkLayerConfig(const json& qc, const std::string& name) {
    for (const auto& p : qc["exclude"])
        if (p == name || (hasGlobMeta(p) && matchesLayerPattern(p, name)))
            return std::nullopt;
    const json& lqc = qc["layer_quant_config"];
    if (lqc.contains(name))
        return lqc[name];
    std::optional<json> found;
    for (const auto& item : lqc.items()) {
        if (!hasGlobMeta(item.key()) || !matchesLayerPattern(item.key(), name))
            continue;
        if (found && *found != item.value())
            qWarning("ambiguous Quark keys for %s", name.c_str());
        if (found && *found != item.value())
            return json("ambiguous");
        found = item.value();
    }
    return found ? found : std::optional<json>(qc["global_quant_config"]);
}

// vLLM: exclude exact or "re:" (re.match); keys with '*' by fnmatch, others by substring.
std::optional<json> vllmLayerConfig(const json& qc, const std::string& name) {
    for (const auto& p : qc["exclude"]) {
        const std::string s = p.get<std::string>();
        if (s == name)
            return std::nullopt;
        if (isRegexPattern(s) && std::regex_search(name, std::regex(s.substr(3)),
                                                   std::regex_constants::match_continuous))
            return std::nullopt;
    }
    std::optional<json> found;
    for (const auto& item : qc["layer_quant_config"].items()) {
        const std::string& k = item.key();
        const bool hit = k.find('*') != std::string::npos ? matchesLayerPattern(k, name)
                                                          : k.find(name) != std::string::npos;
        if (!hit)
            continue;
        if (found && *found != item.value())
            return json("ambiguous");
        found = item.value();
    }
    return found ? found : std::optional<json>(qc["global_quant_config"]);
}

json vllmKvConfig(const json& qc) {
    json kv = nullptr;
    for (const auto& item : qc["layer_quant_config"].items())
        for (const auto& pat : qc["export"]["kv_cache_group"])
            if (matchesLayerPattern(pat.get<std::string>(), item.key())) {
                if (!kv.is_null() && kv != item.value()["output_tensors"])
                    return "inconsistent";
                kv = item.value()["output_tensors"];
            }
    return kv;
}

// Checks that Quark and vLLM read `qc` exactly as the recipe resolves every layer.
void checkConsumersAgree(const Recipe& r, const json& qc, const std::vector<std::string>& names) {
    const json expectedKv = r.kvCache ? r.kvCache->toJson() : json(nullptr);
    QCOMPARE(vllmKvConfig(qc), expectedKv);
    for (const auto& name : names) {
        const std::string kind = layerKindOf(name);
        const auto s = r.schemeFor(name, kind);
        const auto out = r.kvOutputFor(name, kind);
        const auto quark = quarkLayerConfig(qc, name);
        const auto vllm = vllmLayerConfig(qc, name);
        QVERIFY2(bool(s) == bool(quark), name.c_str());
        QVERIFY2(bool(s) == bool(vllm), name.c_str());
        if (!s)
            continue;
        json expected = s->toQuarkLayerConfig();
        if (out)
            expected["output_tensors"] = out->toJson();
        QVERIFY2(*quark == expected, (name + ": " + quark->dump()).c_str());
        // vLLM strips output_tensors of the KV-cache layers after reading the KV spec.
        json fromVllm = *vllm;
        if (out)
            fromVllm["output_tensors"] = expected["output_tensors"];
        QVERIFY2(fromVllm == expected, (name + ": " + vllm->dump()).c_str());
    }
}

std::string errorField(const std::function<void()>& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (message)
            *message = e.what();
        return e.field();
    }
    return "(no error)";
}

// Recipes whose every part Quark can express: they must come back equal.
Recipe expressibleRecipe() {
    Recipe r;
    r.global = scheme("int4_wo_128");
    r.layerTypeOverrides["o_proj"] = scheme("int8");
    // Non-overlapping, listed from least to most specific (the order the import restores).
    r.layerOverrides.push_back({"*layers.1.mlp.up_proj", scheme("uint4_wo_128")});
    r.layerOverrides.push_back({"*layers.0.mlp.down_proj", scheme("fp8")});
    r.exclude = {"lm_head"};
    r.kvCache = fp8KvCacheSpec();
    r.algorithms.push_back({"gptq", json{{"damp_percent", 0.02}, {"block_size", 64}}});
    r.algorithms.push_back({"smoothquant", json{{"alpha", 0.6}}});
    return r;
}

} // namespace

class TestRecipeQuark : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void importInt4WeightOnly() {
        const Recipe r = recipeFromQuarkConfig(quarkInt4Config(), "config.json");
        QVERIFY(r.global);
        QCOMPARE(*r.global, scheme("int4_wo_128"));
        QCOMPARE(r.global->name, std::string("int4_wo_128")); // name recovered from numerics
        QCOMPARE(r.exclude, std::vector<std::string>{"lm_head"});
        QVERIFY(!r.kvCache);
        QVERIFY(r.layerOverrides.empty() && r.layerTypeOverrides.empty());
        QVERIFY(r.algorithms.empty());
        // The bare block reads the same.
        QCOMPARE(recipeFromQuarkConfig(quarkInt4Config()["quantization_config"], "qc"), r);
        QVERIFY(!r.schemeFor("lm_head", "lm_head"));
        QCOMPARE(r.schemeFor("model.layers.1.mlp.up_proj", "up_proj")->weight.groupSize, 128);
    }

    void importFp8WithKvCache() {
        const Recipe r = recipeFromQuarkConfig(quarkFp8KvConfig(), "config.json");
        QCOMPARE(*r.global, scheme("fp8"));
        QCOMPARE(r.kvCache, std::optional<quant::QuantSpec>(fp8KvCacheSpec()));
        // The *k_proj/*v_proj copies Quark writes only restate the global scheme.
        QVERIFY(r.layerOverrides.empty());
        QCOMPARE(r.exclude, std::vector<std::string>{"lm_head"});
        const auto kv = r.kvOutputFor("model.layers.0.self_attn.v_proj", "v_proj");
        QVERIFY(kv);
        QCOMPARE(kv->dtype, quant::DataType::Fp8E4M3);
        QCOMPARE(kv->granularity, quant::Granularity::PerTensor);
        QVERIFY(!kv->isDynamic);
    }

    void importOrdersOverlappingPatternsBySpecificity() {
        json config = quarkInt4Config();
        json& lqc = config["quantization_config"]["layer_quant_config"];
        lqc["model.layers.1.mlp.up_proj"] = layer(fp8Spec(), fp8Spec(), nullptr);
        lqc["*layers.0.mlp.down_proj"] = layer(fp8Spec(), nullptr, nullptr);
        lqc["*mlp*"] = layer(int4G128Spec(), nullptr, nullptr);
        lqc["*self_attn*"] = layer(nullptr, nullptr, nullptr); // quantizes nothing: exclusion
        config["quantization_config"]["algo_config"] = json::parse(
            "[{\"name\": \"awq\", \"model_decoder_layers\": \"model.layers\", \"scaling_layers\":"
            " [{\"prev_op\": \"post_attention_layernorm\", \"layers\": [\"mlp.gate_proj\"],"
            " \"inp\": \"mlp.gate_proj\", \"module2inspect\": \"mlp\"}]},"
            " {\"name\": \"smooth\", \"alpha\": 0.5, \"scale_clamp_min\": 0.001,"
            " \"scaling_layers\": [], \"model_decoder_layers\": \"model.layers\","
            " \"num_attention_heads\": 8}]");
        const Recipe r = recipeFromQuarkConfig(config, "config.json");
        QCOMPARE(r.layerOverrides.size(), size_t(3));
        QCOMPARE(r.layerOverrides[0].pattern, std::string("*mlp*"));
        QCOMPARE(r.layerOverrides[1].pattern, std::string("*layers.0.mlp.down_proj"));
        QCOMPARE(r.layerOverrides[2].pattern, std::string("model.layers.1.mlp.up_proj"));
        QCOMPARE(r.layerOverrides[2].scheme.name, std::string("fp8"));
        QVERIFY(r.isExcluded("model.layers.0.self_attn.q_proj"));
        QCOMPARE(r.schemeFor("model.layers.0.mlp.down_proj", "down_proj")->weight.dtype,
                 quant::DataType::Fp8E4M3);
        QCOMPARE(r.algorithms.size(), size_t(2));
        QCOMPARE(r.algorithms[0].name, std::string("awq"));
        QCOMPARE(r.algorithms[1].name, std::string("smoothquant"));
        QCOMPARE(r.algorithms[1].params["alpha"], json(0.5));
        QVERIFY(!r.algorithms[1].params.contains("num_attention_heads"));
    }

    void importRefusals_data() {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("field");
        auto row = [](const char* name, const char* ptr, const char* value, const char* field) {
            QTest::newRow(name) << QString(ptr) << QString(value) << QString(field);
        };
        row("custom awq export", "/quantization_config/quant_method", "\"awq\"",
            "quantization_config.quant_method");
        row("fx graph mode", "/quantization_config/quant_mode", "\"fx_graph_mode\"",
            "quantization_config.quant_mode");
        row("softmax quantization", "/quantization_config/softmax_quant_spec",
            "{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\"}",
            "quantization_config.softmax_quant_spec");
        row("post-rope kv", "/quantization_config/kv_cache_post_rope", "true",
            "quantization_config.kv_cache_post_rope");
        row("conv layer type", "/quantization_config/layer_type_quant_config/Conv2d",
            "{\"weight\": {\"dtype\": \"int8\", \"qscheme\": \"per_tensor\"}}",
            "quantization_config.layer_type_quant_config.Conv2d");
        row("mla kv group", "/quantization_config/export/kv_cache_group", "[\"*kv_b_proj\"]",
            "quantization_config.export.kv_cache_group");
        row("unknown algorithm", "/quantization_config/algo_config", "[{\"name\": \"svdquant\"}]",
            "quantization_config.algo_config[0].name");
        row("algorithm param type", "/quantization_config/algo_config",
            "[{\"name\": \"gptq\", \"damp_percent\": \"high\"}]",
            "quantization_config.algo_config[0].damp_percent");
        row("bias quantization", "/quantization_config/global_quant_config/bias",
            "{\"dtype\": \"int8\", \"qscheme\": \"per_tensor\"}",
            "quantization_config.global_quant_config.bias");
        row("unknown dtype", "/quantization_config/global_quant_config/weight/dtype", "\"int5\"",
            "quantization_config.global_quant_config.weight.dtype");
        row("min kv scale", "/quantization_config/export/min_kv_scale", "0.5",
            "quantization_config.export.min_kv_scale");
        row("weight merge groups", "/quantization_config/export/weight_merge_groups",
            "[[\"*q_proj\", \"*k_proj\", \"*v_proj\"]]",
            "quantization_config.export.weight_merge_groups");
        row("shared scales", "/quantization_config/shared_scale_groups",
            "[[\"q_proj\", \"k_proj\"]]", "quantization_config.shared_scale_groups");
        row("unknown setting", "/quantization_config/fancy_new_thing", "{\"a\": 1}",
            "quantization_config.fancy_new_thing");
        row("kv specs differ",
            "/quantization_config/layer_quant_config/*v_proj/output_tensors/dtype", "\"fp8_e5m2\"",
            "quantization_config.layer_quant_config.*v_proj.output_tensors");
        row("bad exclude regex", "/quantization_config/exclude/0", "\"re:(\"",
            "quantization_config.exclude[0]");
    }
    void importRefusals() {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, field);
        json config = quarkFp8KvConfig();
        recipeFromQuarkConfig(config, "config.json"); // the base is accepted
        config[json::json_pointer(pointer.toStdString())] = json::parse(value.toStdString());
        std::string message;
        QCOMPARE(QString::fromStdString(errorField(
                     [&] { recipeFromQuarkConfig(config, "model/config.json"); }, &message)),
                 field);
        QVERIFY2(message.find("model/config.json") != std::string::npos, message.c_str());
        QVERIFY2(message.find(field.toStdString()) != std::string::npos, message.c_str());
    }

    void exportBlockAndKeys() {
        const std::vector<std::string> names = llamaLayers(2);
        Recipe r;
        r.global = scheme("fp8");
        r.exclude = {"lm_head", "*layers.1.mlp.*", "re:.*layers\\.0\\.mlp\\.gate_proj"};
        r.kvCache = fp8KvCacheSpec();
        const json qc = quarkConfigFromRecipe(r, names);
        QCOMPARE(qc["quant_method"], json("quark"));
        QCOMPARE(qc["export"], exportBlock({"*k_proj", "*v_proj"}));
        QCOMPARE(qc["kv_cache_group"], json({"*k_proj", "*v_proj"}));
        QCOMPARE(qc["layer_type_quant_config"], json::object());
        QCOMPARE(qc["global_quant_config"], scheme("fp8").toQuarkLayerConfig());
        QCOMPARE(qc["layer_quant_config"]["*k_proj"]["output_tensors"]["dtype"], json("fp8_e4m3"));
        QCOMPARE(qc["layer_quant_config"]["*k_proj"]["output_tensors"]["qscheme"],
                 json("per_tensor"));
        QCOMPARE(qc["kv_cache_quant_config"]["*v_proj"], qc["layer_quant_config"]["*v_proj"]);
        // Wildcard exclusions become exact names (vLLM matches exact or "re:" only).
        const json expectedExclude = {"model.layers.0.mlp.gate_proj",
                                      "model.layers.1.mlp.gate_proj",
                                      "model.layers.1.mlp.up_proj",
                                      "model.layers.1.mlp.down_proj",
                                      "lm_head",
                                      "re:.*layers\\.0\\.mlp\\.gate_proj"};
        QCOMPARE(qc["exclude"], expectedExclude);
        checkConsumersAgree(r, qc, names);

        // Options reach the export block; no layer names keeps patterns as written.
        QuarkExportOptions options;
        options.weightFormat = "fake_quantized";
        options.packMethod = quant::PackOrder::Order;
        const json plain = quarkConfigFromRecipe(r, {}, options);
        QCOMPARE(plain["export"]["weight_format"], json("fake_quantized"));
        QCOMPARE(plain["export"]["pack_method"], json("order"));
        QCOMPARE(plain["exclude"], json(r.exclude));

        Recipe none;
        none.global = scheme("int4_wo_128");
        const json noKv = quarkConfigFromRecipe(none, names);
        QCOMPARE(noKv["export"]["kv_cache_group"], json::array());
        QVERIFY(!noKv.contains("kv_cache_group"));
        QCOMPARE(noKv["layer_quant_config"], json::object());
        QCOMPARE(noKv["algo_config"], json(nullptr));
    }

    void exportResolvesOverlapsForConsumers() {
        const std::vector<std::string> names = llamaLayers(3);
        Recipe r;
        r.global = scheme("int4_wo_128");
        r.layerTypeOverrides["o_proj"] = scheme("int8");
        r.layerTypeOverrides["k_proj"] = scheme("uint4_wo_128");
        r.layerOverrides.push_back({"*mlp*", scheme("uint4_wo_64")});
        r.layerOverrides.push_back({"*layers.1.*", scheme("fp8")});
        r.layerOverrides.push_back({"re:.*layers\\.0\\.self_attn\\.q_proj", scheme("int8")});
        r.exclude = {"*layers.2.mlp.down_proj", "lm_head", "*layers.2.self_attn.v_proj"};
        r.kvCache = fp8KvCacheSpec();
        const json qc = quarkConfigFromRecipe(r, names);
        checkConsumersAgree(r, qc, names);
        // No regex keys reach Quark.
        for (const auto& item : qc["layer_quant_config"].items())
            QVERIFY(!isRegexPattern(item.key()));

        // Without names a regex layer key cannot be written.
        QCOMPARE(errorField([&] { quarkConfigFromRecipe(r, {}); }),
                 std::string("layer_overrides[2].pattern"));

        // The same holds when there is no global scheme: unmatched layers are excluded.
        r.global.reset();
        const json noGlobal = quarkConfigFromRecipe(r, names);
        checkConsumersAgree(r, noGlobal, names);
        QVERIFY(noGlobal["global_quant_config"]["weight"].is_null());

        // Importing it back resolves every layer as the recipe does.
        const Recipe back = recipeFromQuarkConfig(noGlobal, "export");
        for (const auto& name : names) {
            const std::string kind = layerKindOf(name);
            QVERIFY2(back.schemeFor(name, kind) == r.schemeFor(name, kind), name.c_str());
            QVERIFY2(back.kvOutputFor(name, kind) == r.kvOutputFor(name, kind), name.c_str());
        }
    }

    void roundTrip() {
        const std::vector<std::string> names = llamaLayers(2);
        const Recipe r = expressibleRecipe();
        const json qc = quarkConfigFromRecipe(r, names);
        checkConsumersAgree(r, qc, names);
        QCOMPARE(qc["algo_config"][1]["name"], json("smooth"));
        const Recipe back = recipeFromQuarkConfig(json{{"quantization_config", qc}}, "config.json");
        QVERIFY(back == r);
        QCOMPARE(back.layerTypeOverrides.at("o_proj").name, std::string("int8"));
        // Also without layer names, and from the imported fixtures.
        QVERIFY(recipeFromQuarkConfig(quarkConfigFromRecipe(r, {}), "qc") == r);
        for (const json& fixture : {quarkInt4Config(), quarkFp8KvConfig()}) {
            const Recipe imported = recipeFromQuarkConfig(fixture, "config.json");
            QVERIFY(recipeFromQuarkConfig(quarkConfigFromRecipe(imported, names), "qc") ==
                    imported);
        }
    }

    void flags() {
        QuantFlags f;
        f.quantScheme = "int4_wo_128";
        f.excludeLayers = {"lm_head"};
        f.layerQuantSchemes = {{"*down_proj", "int8"}};
        f.kvCacheDtype = "fp8";
        f.calibData = "calib.txt";
        f.numCalibData = 64;
        f.seqLen = 256;
        const Recipe r = recipeFromFlags(f);
        QCOMPARE(*r.global, scheme("int4_wo_128"));
        QCOMPARE(r.exclude, std::vector<std::string>{"lm_head"});
        QCOMPARE(r.layerOverrides.size(), size_t(1));
        QCOMPARE(r.layerOverrides[0].scheme, scheme("int8"));
        QCOMPARE(r.kvCache, std::optional<quant::QuantSpec>(fp8KvCacheSpec()));
        QCOMPARE(r.calibration.dataPath, std::string("calib.txt"));
        QCOMPARE(r.calibration.numSamples, int64_t(64));
        QCOMPARE(r.calibration.seqLen, int64_t(256));
        // Legacy names are accepted.
        QuantFlags legacy;
        legacy.quantScheme = "w_int4_per_group_sym";
        QCOMPARE(recipeFromFlags(legacy).global->weight.groupSize, 128);

        std::string message;
        QuantFlags bad;
        bad.quantScheme = "int4_wo_100";
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }, &message),
                 std::string("--quant_scheme"));
        // A near miss names the scheme meant (SchemeRegistry's "did you mean"), not all ~80.
        QVERIFY2(message.find("did you mean 'int4_wo_128'") != std::string::npos, message.c_str());
        QVERIFY2(message.find("mxfp4") == std::string::npos, message.c_str());
        // A name near none lists every valid one, Quark's legacy names among them.
        bad.quantScheme = "zzzzzzzzzzzz";
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }, &message),
                 std::string("--quant_scheme"));
        for (const char* valid : {"int4_wo_128", "fp8", "mxfp4", "w_int4_per_group_sym"})
            QVERIFY2(message.find(valid) != std::string::npos, message.c_str());
        bad = {};
        bad.layerQuantSchemes = {{"*down_proj", "int9"}};
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }), std::string("--layer_quant_scheme"));
        bad = {};
        bad.kvCacheDtype = "int8";
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }, &message),
                 std::string("--kv_cache_dtype"));
        QVERIFY(message.find("fp8") != std::string::npos);
        bad = {};
        bad.numCalibData = 0;
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }), std::string("--num_calib_data"));
        bad = {};
        bad.seqLen = -5;
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }), std::string("--seq_len"));
        bad = {};
        bad.excludeLayers = {"re:(("};
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }), std::string("--exclude_layers"));

        // Flags override a loaded recipe's fields and leave the rest alone.
        Recipe loaded = expressibleRecipe();
        loaded.calibration.seed = 99;
        QuantFlags override;
        override.quantScheme = "fp8";
        override.kvCacheDtype = "none";
        applyFlags(loaded, override);
        QCOMPARE(*loaded.global, scheme("fp8"));
        QVERIFY(!loaded.kvCache);
        QCOMPARE(loaded.calibration.seed, uint64_t(99));
        QCOMPARE(loaded.layerOverrides, expressibleRecipe().layerOverrides);
        QCOMPARE(loaded.exclude, expressibleRecipe().exclude);
        // A failing flag leaves the recipe untouched.
        const Recipe before = loaded;
        QuantFlags failing;
        failing.quantScheme = "int4_wo_128";
        failing.kvCacheDtype = "fp16";
        QVERIFY_THROWS_EXCEPTION(Error, applyFlags(loaded, failing));
        QVERIFY(loaded == before);
    }

    void provenance() {
        const std::string text = "{\n  \"vocab_size\": 512, \"hidden_size\": 64,\n"
                                 "  \"architectures\": [\"LlamaForCausalLM\"],\n"
                                 "  \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, "
                                 "\"tie_word_embeddings\": true,\n"
                                 "  \"model_type\": \"llama\", \"name\": \"caf\\u00e9\"\n}";
        // Python: hashlib.sha256(json.dumps(json.loads(text), sort_keys=True,
        //   separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
        const std::string reference =
            "b7539f1f24d4541487ff422ac3f48a831c3f62287822f7b3e2d41ccc1f3613d6";
        QCOMPARE(modelConfigHash(text), reference);
        const std::string reordered =
            "{\"name\":\"café\",\"model_type\":\"llama\",\"tie_word_embeddings\":true,"
            "\"rope_theta\":10000.0,\"rms_norm_eps\":1e-05,"
            "\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"vocab_size\":512}";
        QCOMPARE(modelConfigHash(reordered), reference);
        std::string changed = reordered;
        changed.replace(changed.find("512"), 3, "513");
        QVERIFY(modelConfigHash(changed) != reference);
        QCOMPARE(errorField([&] { modelConfigHash("{\"a\": ", "m/config.json"); }),
                 std::string(""));

        QCOMPARE(toolVersion(), std::string(QS_VERSION));
        QVERIFY(!toolVersion().empty());
        const Provenance p = makeProvenance(text, "/models/llama");
        QCOMPARE(p.modelConfigHash, reference);
        QCOMPARE(p.modelPath, std::string("/models/llama"));
        const QDateTime created =
            QDateTime::fromString(QString::fromStdString(p.createdAt), Qt::ISODate);
        QVERIFY(created.isValid());
        QVERIFY(qAbs(created.secsTo(QDateTime::currentDateTimeUtc())) < 600);
        Recipe r;
        r.provenance = p;
        r.provenance.device = "cpu"; // filled by the run that records the recipe
        r.provenance.dtype = "bfloat16";
        const Recipe read = Recipe::fromJson(r.toJson(), "m");
        QCOMPARE(read.provenance, r.provenance);
        QCOMPARE(read.provenance.dtype, std::string("bfloat16"));
        // A recipe recorded before the provenance named a device and a dtype still loads.
        nlohmann::json older = r.toJson();
        older["provenance"].erase("device");
        older["provenance"].erase("dtype");
        QCOMPARE(Recipe::fromJson(older, "m").provenance, p);
    }
};

QS_TEST_APPLESS_MAIN(TestRecipeQuark)
#include "tst_recipe_quark.moc"
