// Recipe: layer patterns (expected matches computed with Python's fnmatch.fnmatchcase and
// re.fullmatch), resolution precedence, JSON round trip, strict validation with field paths,
// atomic save.
#include "TestMain.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QtTest>

#include "TestSupport.h"

#include <unistd.h>

using namespace qs;
using nlohmann::json;

namespace {

quant::QuantScheme scheme(const char* name) {
    return quant::resolveScheme(name);
}

// A recipe touching every field, with one custom (unnamed) scheme.
Recipe fullRecipe() {
    Recipe r;
    r.global = scheme("int4_wo_128");
    r.layerOverrides.push_back({"*down_proj", scheme("int8")});
    quant::QuantScheme custom = scheme("uint4_wo_64");
    custom.name.clear();
    custom.weight.groupSize = 256; // no registry scheme uses groups of 256
    r.layerOverrides.push_back({"re:.*layers\\.1\\..*", custom});
    r.layerTypeOverrides["o_proj"] = scheme("fp8");
    r.exclude = {"lm_head", "*layers.3.mlp.*"};
    r.kvCache = fp8KvCacheSpec();
    r.algorithms.push_back({"gptq", json{{"damp_percent", 0.02}, {"desc_act", false}}});
    r.algorithms.push_back({"smoothquant", json{{"alpha", 0.5}}});
    r.calibration = {"calib.txt", 64, 256, 1234};
    r.evaluation = {"wiki.test.txt", 128, 40};
    r.exportTargets = {"hf_fake", "quark"};
    r.unfitPolicy = "skip";
    r.provenance = {std::string(64, 'a'), "0.1.0", "2025-01-01T00:00:00Z", "/models/x"};
    return r;
}

} // namespace

class TestRecipe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void patternMatching_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("expected");
        int n = 0;
        auto row = [&](const char* p, const char* name, bool e) {
            QTest::addRow("%d %s", n++, p) << QString(p) << QString(name) << e;
        };
        // Expected values: fnmatch.fnmatchcase(name, pattern) / re.fullmatch(regex, name).
        row("*down_proj", "model.layers.0.mlp.down_proj", true);
        row("*down_proj", "model.layers.0.mlp.down_proj_x", false);
        row("*layers.0.mlp.down_proj", "model.layers.0.mlp.down_proj", true);
        row("*layers.0.mlp.down_proj", "model.layers.10.mlp.down_proj", false);
        row("lm_head", "lm_head", true);
        row("lm_head", "model.lm_head", false);
        row("*lm_head", "lm_head", true);
        row("model.layers.?.self_attn.q_proj", "model.layers.7.self_attn.q_proj", true);
        row("model.layers.?.self_attn.q_proj", "model.layers.17.self_attn.q_proj", false);
        row("model.layers.1[0-5].*", "model.layers.12.mlp.up_proj", true);
        row("model.layers.1[0-5].*", "model.layers.16.mlp.up_proj", false);
        row("model.layers.[!0].*", "model.layers.3.mlp.up_proj", true);
        row("model.layers.[!0].*", "model.layers.0.mlp.up_proj", false);
        row("*[kv]_proj", "model.layers.0.self_attn.k_proj", true);
        row("*[kv]_proj", "model.layers.0.self_attn.q_proj", false);
        row("*.[", "x.[", true);
        row("*.[", "x.a", false);
        row("*self_attn*", "model.layers.3.self_attn.o_proj", true);
        row("*", "anything.at.all", true);
        row("*mlp*proj", "model.layers.0.mlp.gate_proj", true);
        row("*mlp*proj", "model.layers.0.mlp.gate_proj.bias", false);
        row("[]]x", "]x", true);
        row("[!]]x", "]x", false);
        row("[!]]x", "ax", true);
        row("a*b*c", "a.b.b.c", true);
        row("a*b*c", "a.c.b", false);
        row("re:.*layers\\.(0|1)\\.mlp\\..*", "model.layers.1.mlp.down_proj", true);
        row("re:.*layers\\.(0|1)\\.mlp\\..*", "model.layers.11.mlp.down_proj", false);
        row("re:.*k_proj", "model.layers.0.self_attn.k_proj", true);
        row("re:.*k_proj", "model.layers.0.self_attn.k_proj_x", false);
        row("re:model", "model.layers.0.self_attn.k_proj", false);
        row("re:lm_head", "lm_head", true);
    }
    void patternMatching() {
        QFETCH(QString, pattern);
        QFETCH(QString, name);
        QFETCH(bool, expected);
        QCOMPARE(matchesLayerPattern(pattern.toStdString(), name.toStdString()), expected);
    }

    void patternValidation() {
        validateLayerPattern("*down_proj", "r", "f");
        validateLayerPattern("re:.*k_proj", "r", "f");
        for (const char* bad : {"", "re:", "re:([a-", "re:(unclosed"}) {
            try {
                validateLayerPattern(bad, "recipe.json", "exclude[3]");
                QFAIL(qPrintable(QString("accepted bad pattern '%1'").arg(bad)));
            } catch (const Error& e) {
                QCOMPARE(e.field(), std::string("exclude[3]"));
                QVERIFY(std::string(e.what()).find("recipe.json") != std::string::npos);
            }
        }
        QCOMPARE(layerKindOf("model.layers.0.mlp.down_proj"), std::string("down_proj"));
        QCOMPARE(layerKindOf("lm_head"), std::string("lm_head"));
    }

    void precedence() {
        Recipe r;
        r.global = scheme("int4_wo_128");
        r.layerTypeOverrides["down_proj"] = scheme("int8");
        r.layerTypeOverrides["o_proj"] = scheme("mxfp4");
        r.layerOverrides.push_back({"*down_proj", scheme("fp8")});
        r.layerOverrides.push_back({"*layers.1.*", scheme("uint4_wo_128")});
        r.exclude = {"*layers.2.mlp.down_proj", "lm_head"};
        r.kvCache = fp8KvCacheSpec();

        auto nameOf = [&](const std::string& layer) {
            const auto s = r.schemeFor(layer, layerKindOf(layer));
            return s ? s->name : std::string("(none)");
        };
        // exclude beats every override
        QCOMPARE(nameOf("model.layers.2.mlp.down_proj"), std::string("(none)"));
        QCOMPARE(nameOf("lm_head"), std::string("(none)"));
        // the last matching pattern wins over earlier ones and over the type override
        QCOMPARE(nameOf("model.layers.1.mlp.down_proj"), std::string("uint4_wo_128"));
        QCOMPARE(nameOf("model.layers.0.mlp.down_proj"), std::string("fp8"));
        // a pattern beats the type override
        QCOMPARE(nameOf("model.layers.1.self_attn.o_proj"), std::string("uint4_wo_128"));
        // type override beats global
        QCOMPARE(nameOf("model.layers.0.self_attn.o_proj"), std::string("mxfp4"));
        // global otherwise
        QCOMPARE(nameOf("model.layers.0.self_attn.q_proj"), std::string("int4_wo_128"));
        // no global: unquantized
        r.global.reset();
        QCOMPARE(nameOf("model.layers.0.self_attn.q_proj"), std::string("(none)"));

        // KV cache: output of k_proj and v_proj only, excluded ones included.
        r.exclude.push_back("*layers.0.self_attn.k_proj");
        QVERIFY(r.isExcluded("model.layers.0.self_attn.k_proj"));
        QCOMPARE(r.kvOutputFor("model.layers.0.self_attn.k_proj", "k_proj"),
                 std::optional<quant::QuantSpec>(fp8KvCacheSpec()));
        QCOMPARE(r.kvOutputFor("model.layers.3.self_attn.v_proj", "v_proj"),
                 std::optional<quant::QuantSpec>(fp8KvCacheSpec()));
        QVERIFY(!r.kvOutputFor("model.layers.0.self_attn.q_proj", "q_proj"));
        QVERIFY(!r.kvOutputFor("model.decoder.layers.0.fc1", "fc1"));
        r.kvCache.reset();
        QVERIFY(!r.kvOutputFor("model.layers.0.self_attn.k_proj", "k_proj"));
    }

    void jsonRoundTrip() {
        const Recipe r = fullRecipe();
        const json j = r.toJson();
        // Named schemes stay names; the custom one is written in Quark layer-config form.
        QCOMPARE(j["global"], json("int4_wo_128"));
        QCOMPARE(j["layer_overrides"][0]["scheme"], json("int8"));
        QVERIFY(j["layer_overrides"][1]["scheme"].is_object());
        QCOMPARE(j["layer_overrides"][1]["scheme"]["weight"]["group_size"], json(256));
        QCOMPARE(j["layer_overrides"][1]["scheme"]["weight"]["dtype"], json("uint4"));
        QCOMPARE(j["kv_cache"], json("fp8"));
        QCOMPARE(j["algorithms"][0]["name"], json("gptq"));
        QCOMPARE(j["algorithms"][0]["damp_percent"], json(0.02));
        QCOMPARE(j["calibration"]["seed"], json(1234));

        const Recipe back = Recipe::fromJson(j, "memory");
        QVERIFY(back == r);
        QCOMPARE(back.global->name, std::string("int4_wo_128"));
        // A changed field is noticed by operator==.
        Recipe changed = back;
        changed.calibration.seed = 1235;
        QVERIFY(changed != r);
        changed = back;
        changed.layerOverrides[1].scheme.weight.groupSize = 64;
        QVERIFY(changed != r);

        // Through a file, with the documented key order.
        const std::string path = (test::tempDir("recipe") + "/r.json").toStdString();
        r.save(path);
        QCOMPARE(Recipe::load(path), r);
        QFile f(QString::fromStdString(path));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.startsWith("{\n  \"format\": \"quantscope-recipe\",\n  \"version\": 1,"));

        // A non-standard KV spec is written in full; a named scheme whose numerics no longer
        // match its name is written in full too (and comes back unnamed but equal).
        Recipe odd;
        odd.kvCache = fp8KvCacheSpec();
        odd.kvCache->isDynamic = true;
        odd.global = scheme("int4_wo_128");
        odd.global->weight.groupSize = 256;
        const json oddJson = odd.toJson();
        QVERIFY(oddJson["kv_cache"].is_object());
        QCOMPARE(oddJson["kv_cache"]["is_dynamic"], json(true));
        QVERIFY(oddJson["global"].is_object());
        const Recipe oddBack = Recipe::fromJson(oddJson, "odd");
        QVERIFY(oddBack == odd);
        QVERIFY(oddBack.global->name.empty());

        // Defaults survive a minimal document.
        const Recipe minimal =
            Recipe::fromJson(json{{"format", "quantscope-recipe"}, {"version", 1}}, "m");
        QVERIFY(minimal == Recipe());
        QCOMPARE(minimal.calibration.numSamples, int64_t(128));
        QCOMPARE(minimal.calibration.seqLen, int64_t(512));
    }

    void validationErrors_data() {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("field");
        auto row = [](const char* name, const char* ptr, const char* value, const char* field) {
            QTest::newRow(name) << QString(ptr) << QString(value) << QString(field);
        };
        row("unknown top key", "/globl", "\"int8\"", "globl");
        row("future version", "/version", "2", "version");
        row("wrong format", "/format", "\"quark\"", "format");
        row("unknown scheme name", "/global", "\"int5_wo_128\"", "global");
        row("scheme wrong type", "/global", "42", "global");
        row("unknown dtype", "/global",
            "{\"weight\": {\"dtype\": \"int5\", \"qscheme\": \"per_tensor\"}}",
            "global.weight.dtype");
        row("bad group size", "/layer_overrides/2/scheme",
            "{\"weight\": {\"dtype\": \"int4\", \"qscheme\": \"per_group\", \"ch_axis\": -1,"
            " \"group_size\": -5}}",
            "layer_overrides[2].scheme.weight.group_size");
        row("unknown scheme key", "/layer_overrides/2/scheme",
            "{\"weight\": {\"dtype\": \"int4\", \"qscheme\": \"per_tensor\", \"bits\": 4}}",
            "layer_overrides[2].scheme.weight.bits");
        row("bad regex", "/layer_overrides/1/pattern", "\"re:([a-\"", "layer_overrides[1].pattern");
        row("override without scheme", "/layer_overrides/0", "{\"pattern\": \"*q_proj\"}",
            "layer_overrides[0].scheme");
        row("override unknown key", "/layer_overrides/0",
            "{\"pattern\": \"*q_proj\", \"scheme\": \"int8\", \"shceme\": 1}",
            "layer_overrides[0].shceme");
        row("bad exclude regex", "/exclude/1", "\"re:(\"", "exclude[1]");
        row("exclude not strings", "/exclude/0", "3", "exclude[0]");
        row("type key with dots", "/layer_type_overrides/mlp.down_proj", "\"int8\"",
            "layer_type_overrides.mlp.down_proj");
        row("kv cache dtype", "/kv_cache", "\"int8\"", "kv_cache");
        row("negative samples", "/calibration/num_samples", "-1", "calibration.num_samples");
        row("zero samples", "/calibration/num_samples", "0", "calibration.num_samples");
        row("negative seed", "/calibration/seed", "-3", "calibration.seed");
        row("string seq len", "/calibration/seq_len", "\"512\"", "calibration.seq_len");
        row("calibration extra key", "/calibration/samples", "12", "calibration.samples");
        // A window of one token predicts nothing: refused here, not after tokenizing the data
        // (recipe/RecipeLimits.h is the one table of these bounds).
        row("one-token calibration window", "/calibration/seq_len", "1", "calibration.seq_len");
        row("one-token evaluation window", "/evaluation/seq_len", "1", "evaluation.seq_len");
        row("huge evaluation window", "/evaluation/seq_len", "16777217", "evaluation.seq_len");
        row("negative windows", "/evaluation/max_windows", "-1", "evaluation.max_windows");
        row("unknown algorithm", "/algorithms/0/name", "\"gptqq\"", "algorithms[0].name");
        row("algorithm param type", "/algorithms/0/damp_percent", "\"x\"",
            "algorithms[0].damp_percent");
        row("algorithm param range", "/algorithms/0/damp_percent", "1.5",
            "algorithms[0].damp_percent");
        row("unknown algorithm param", "/algorithms/0/blocksize", "128", "algorithms[0].blocksize");
        row("duplicate algorithm", "/algorithms/1", "{\"name\": \"gptq\"}", "algorithms[1].name");
        row("gptq desc_act without static groups", "/algorithms/0/static_groups", "false",
            "algorithms[0].static_groups");
        row("unknown export target", "/export_targets/0", "\"tflite\"", "export_targets[0]");
        row("unfit policy", "/unfit_policy", "\"ignore\"", "unfit_policy");
        row("bad hash", "/provenance/model_config_hash", "\"xyz\"", "provenance.model_config_hash");
    }
    void validationErrors() {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, field);
        json j = fullRecipe().toJson();
        j["layer_overrides"].push_back(json{{"pattern", "*gate_proj"}, {"scheme", "int8"}});
        j["algorithms"][0]["desc_act"] = true;
        // The base document is valid...
        Recipe::fromJson(j, "recipe.json");
        // ...and the one change makes it fail at exactly that field.
        j[json::json_pointer(pointer.toStdString())] = json::parse(value.toStdString());
        try {
            Recipe::fromJson(j, "recipe.json");
            QFAIL("accepted");
        } catch (const Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), field);
            const std::string message = e.what();
            QVERIFY2(message.find("recipe.json") != std::string::npos, e.what());
            QVERIFY2(message.find(field.toStdString()) != std::string::npos, e.what());
            QVERIFY(!e.reason().empty());
        }
    }

    void quarkConfigGivenAsRecipeGetsAHint() {
        try {
            Recipe::fromJson(json{{"quantization_config", json::object()}}, "config.json");
            QFAIL("accepted");
        } catch (const Error& e) {
            QCOMPARE(e.field(), std::string("format"));
            QVERIFY(std::string(e.what()).find("Quark") != std::string::npos);
        }
    }

    void atomicSave() {
        const QString dir = test::tempDir("recipe-save");
        const std::string path = (dir + "/recipe.json").toStdString();
        Recipe r = fullRecipe();
        r.save(path);
        r.calibration.numSamples = 7;
        r.save(path); // replacing an existing file
        QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 QStringList{"recipe.json"});
        QCOMPARE(Recipe::load(path).calibration.numSamples, int64_t(7));

        // An invalid recipe is refused before anything is written.
        Recipe bad = r;
        bad.calibration.numSamples = -4;
        const std::string badPath = (dir + "/bad.json").toStdString();
        QVERIFY_THROWS_EXCEPTION(Error, bad.save(badPath));
        QVERIFY(!QFile::exists(QString::fromStdString(badPath)));

        // Unwritable destinations: the error names the path.
        const std::string missing = (dir + "/no-such-dir/recipe.json").toStdString();
        try {
            r.save(missing);
            QFAIL("saved into a missing folder");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(missing) != std::string::npos, e.what());
        }
        if (geteuid() != 0) { // root ignores directory permissions
            const QString locked = dir + "/locked";
            QVERIFY(QDir().mkpath(locked));
            QFile::setPermissions(locked, QFile::ReadOwner | QFile::ExeOwner);
            const std::string lockedPath = (locked + "/recipe.json").toStdString();
            QVERIFY_THROWS_EXCEPTION(Error, r.save(lockedPath));
            QVERIFY(QDir(locked).entryList(QDir::Files | QDir::Hidden).isEmpty());
            QFile::setPermissions(locked, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        }
        try {
            Recipe::load((dir + "/absent.json").toStdString());
            QFAIL("loaded a missing file");
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("absent.json") != std::string::npos);
        }
    }
};

QS_TEST_APPLESS_MAIN(TestRecipe)
#include "tst_recipe.moc"
