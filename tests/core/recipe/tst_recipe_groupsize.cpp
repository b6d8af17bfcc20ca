// Group size as a recipe field (Quark's per-group names take one, as its --group_size), the
// Quark flags that shape a recipe (--group_size, --pre_quantization_optimization, dataset names)
// and the scheme registry's one table of names and descriptions.
#include "TestMain.h"
#include "quant/SchemeRegistry.h"
#include "recipe/QuarkDatasets.h"
#include "recipe/Recipe.h"
#include "recipe/RecipeFlags.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QtTest>

#include "TestSupport.h"

#include <functional>

using namespace qs;
using nlohmann::json;

namespace {

// The error's field, and its message in `message`.
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

json recipeWithGlobal(const json& global) {
    return json{{"format", "quantscope-recipe"}, {"version", 1}, {"global", global}};
}

} // namespace

class TestRecipeGroupSize : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every registry entry explains itself in one line; the group size each name has.
    void registryDescriptionsAndGroupSizes() {
        int takers = 0;
        for (const quant::SchemeName& s : quant::schemeNames()) {
            QVERIFY2(!s.description.empty(), s.name.c_str());
            QVERIFY2(s.description.rfind("= ", 0) != 0, s.description.c_str());
            QVERIFY2(s.description.find('\n') == std::string::npos, s.name.c_str());
            QCOMPARE(quant::findSchemeName(s.name), &s);
            if (s.takesGroupSize) {
                ++takers;
                QCOMPARE(s.groupSize, quant::kDefaultGroupSize);
            }
        }
        QVERIFY(takers >= 7);
        QCOMPARE(quant::findSchemeName("uint4_wo_32")->groupSize, 32);
        QVERIFY(!quant::findSchemeName("uint4_wo_32")->takesGroupSize);
        QCOMPARE(quant::findSchemeName("int8")->groupSize, 0);
        QCOMPARE(quant::findSchemeName("nope"), nullptr);
        QVERIFY(quant::findSchemeName("w_int8_per_group_sym")->takesGroupSize);
        const std::string alias =
            quant::findSchemeName("w_int8_a_int8_per_tensor_sym")->description;
        QVERIFY2(alias.find("int8") != std::string::npos &&
                     alias.find("per tensor") != std::string::npos,
                 alias.c_str());
        // A Quark per-group name with the group size is uint4_wo_32 but for the axis it
        // writes (Quark's older configs said ch_axis 1, the same axis of a 2-D weight).
        quant::QuantSpec legacy = quant::resolveScheme("w_uint4_per_group_asym", 32).weight;
        QCOMPARE(legacy.chAxis, 1);
        legacy.chAxis = -1;
        QCOMPARE(legacy, quant::resolveScheme("uint4_wo_32").weight);
        QCOMPARE(quant::resolveScheme("w_uint4_per_group_asym", 32).label(),
                 std::string("w_uint4_per_group_asym (group 32)"));
        QCOMPARE(quant::resolveScheme("uint4_wo_32").label(), std::string("uint4_wo_32"));
        QCOMPARE(quant::resolveScheme("int4_wo_32", 32), quant::resolveScheme("int4_wo_32"));
    }

    // {"name", "group_size"} round-trips; the default group size is written as the bare name
    // (what older recipes say); every scheme position takes the object form.
    void roundTrip() {
        Recipe r;
        r.global = quant::resolveScheme("w_uint4_per_group_asym", 32);
        r.layerOverrides.push_back({"*o_proj", quant::resolveScheme("w_int4_per_group_sym", 64)});
        r.layerTypeOverrides["up_proj"] = quant::resolveScheme("w_int8_per_group_sym");
        const json j = r.toJson();
        QCOMPARE(j["global"], (json{{"name", "w_uint4_per_group_asym"}, {"group_size", 32}}));
        QCOMPARE(j["layer_overrides"][0]["scheme"],
                 (json{{"name", "w_int4_per_group_sym"}, {"group_size", 64}}));
        QCOMPARE(j["layer_type_overrides"]["up_proj"], json("w_int8_per_group_sym"));
        const Recipe back = Recipe::fromJson(j, "r.json");
        QVERIFY(back == r);
        QCOMPARE(back.global->name, std::string("w_uint4_per_group_asym"));
        QCOMPARE(back.global->weight.groupSize, 32);
        QCOMPARE(back.layerOverrides[0].scheme.weight.groupSize, 64);
        QCOMPARE(back.toJson(), j);
        // A name that fixes its group size, said again, is the same scheme.
        QCOMPARE(*Recipe::fromJson(recipeWithGlobal({{"name", "int4_wo_32"}, {"group_size", 32}}),
                                   "r.json")
                      .global,
                 quant::resolveScheme("int4_wo_32"));
        QCOMPARE(*Recipe::fromJson(recipeWithGlobal({{"name", "int8"}}), "r.json").global,
                 quant::resolveScheme("int8"));
    }

    // Recipes written before the field load as they did: a per-group name is 128, short names
    // keep theirs, and every sample recipe still loads.
    void olderRecipesLoad() {
        QCOMPARE(Recipe::fromJson(recipeWithGlobal("w_uint4_per_group_asym"), "old.json")
                     .global->weight.groupSize,
                 128);
        QCOMPARE(Recipe::fromJson(recipeWithGlobal("uint4_wo_32"), "old.json").global->weight,
                 quant::resolveScheme("uint4_wo_32").weight);
        const QDir examples(QStringLiteral(QS_SOURCE_DIR "/examples/recipes"));
        int loaded = 0;
        for (const QString& f : examples.entryList({"*.json"}, QDir::Files)) {
            Recipe::load(examples.filePath(f).toStdString());
            ++loaded;
        }
        QVERIFY(loaded > 0);
    }

    void badGroupSizesNameTheField_data() {
        QTest::addColumn<QString>("global");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("reason");
        QTest::newRow("fixed by the name") << R"({"name": "int4_wo_128", "group_size": 32})"
                                           << "global.group_size"
                                           << "fixes its group size at 128";
        QTest::newRow("not per group") << R"({"name": "int8", "group_size": 32})"
                                       << "global.group_size"
                                       << "takes no group size";
        QTest::newRow("zero") << R"({"name": "w_uint4_per_group_asym", "group_size": 0})"
                              << "global.group_size"
                              << "outside [1, 1048576]";
        QTest::newRow("text") << R"({"name": "w_uint4_per_group_asym", "group_size": "32"})"
                              << "global.group_size"
                              << "expected an integer";
        QTest::newRow("unknown name") << R"({"name": "w_uint3_per_group", "group_size": 32})"
                                      << "global.name"
                                      << "unknown scheme";
        QTest::newRow("unknown key") << R"({"name": "w_uint4_per_group_asym", "groupsize": 32})"
                                     << "global.groupsize"
                                     << "unknown key";
    }

    void badGroupSizesNameTheField() {
        QFETCH(QString, global);
        QFETCH(QString, field);
        QFETCH(QString, reason);
        std::string message;
        QCOMPARE(QString::fromStdString(errorField(
                     [&] {
                         Recipe::fromJson(recipeWithGlobal(json::parse(global.toStdString())),
                                          "r.json");
                     },
                     &message)),
                 field);
        QVERIFY2(message.find(reason.toStdString()) != std::string::npos, message.c_str());
        QVERIFY2(message.find("r.json") != std::string::npos, message.c_str());
    }

    // --group_size over every scheme that takes one; refused where it would do nothing or
    // contradict the name.
    void groupSizeFlag() {
        QuantFlags f;
        f.quantScheme = "w_uint4_per_group_asym";
        f.layerQuantSchemes = {{"*o_proj", "w_int4_per_group_sym"}, {"*q_proj", "int8"}};
        f.groupSize = 32;
        Recipe r = recipeFromFlags(f);
        QCOMPARE(r.global->weight.groupSize, 32);
        QCOMPARE(r.layerOverrides[0].scheme.weight.groupSize, 32);
        QCOMPARE(r.layerOverrides[1].scheme, quant::resolveScheme("int8"));
        // Over a recipe: its schemes that take one.
        QuantFlags only;
        only.groupSize = 64;
        applyFlags(r, only);
        QCOMPARE(r.global->weight.groupSize, 64);

        std::string message;
        QuantFlags bad;
        bad.quantScheme = "int4_wo_128";
        bad.groupSize = 32;
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }, &message), std::string("--group_size"));
        QVERIFY2(message.find("fixes its group size at 128") != std::string::npos, message.c_str());
        bad.quantScheme = "fp8";
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }, &message), std::string("--group_size"));
        QVERIFY2(message.find("w_uint4_per_group_asym") != std::string::npos, message.c_str());
        bad.quantScheme = "w_uint4_per_group_asym";
        bad.groupSize = 0;
        QCOMPARE(errorField([&] { recipeFromFlags(bad); }), std::string("--group_size"));
        // int4_wo_32 with --group_size 32 says the same thing twice: fine.
        QuantFlags same;
        same.quantScheme = "int4_wo_32";
        same.layerQuantSchemes = {{"*o_proj", "w_int4_per_group_sym"}};
        same.groupSize = 32;
        QCOMPARE(recipeFromFlags(same).global->weight.groupSize, 32);
    }

    // --pre_quantization_optimization in Quark's order before --quant_algo, stages kept.
    void preQuantizationOptimizations() {
        QuantFlags f;
        f.quantScheme = "w_int8_a_int8_per_tensor_sym";
        f.quantAlgos = {"gptq"};
        f.preQuantOptimizations = {"smoothquant", "rotation"};
        Recipe r = recipeFromFlags(f);
        QCOMPARE(r.algorithms.size(), size_t(3));
        QCOMPARE(r.algorithms[0].name, std::string("rotation"));
        QCOMPARE(r.algorithms[1].name, std::string("smoothquant"));
        QCOMPARE(r.algorithms[2].name, std::string("gptq"));
        QCOMPARE(r.algorithms[0].params, json::object()); // R1: Quark 0.13's llama template
        f.quantAlgos.clear();
        f.preQuantOptimizations = {"quarot"};
        r = recipeFromFlags(f);
        QCOMPARE(r.algorithms.size(), size_t(1));
        QCOMPARE(r.algorithms[0].params, (json{{"r1", true}, {"r2", true}, {"r4", true}}));
        // --quant_algo quarot means the same.
        f.preQuantOptimizations.clear();
        f.quantAlgos = {"quarot"};
        QCOMPARE(recipeFromFlags(f).algorithms[0].params, r.algorithms[0].params);

        std::string message;
        f.quantAlgos = {"rotation"};
        f.preQuantOptimizations = {"quarot"};
        QCOMPARE(errorField([&] { recipeFromFlags(f); }, &message),
                 std::string("--pre_quantization_optimization"));
        QVERIFY2(message.find("twice") != std::string::npos, message.c_str());
        f.quantAlgos.clear();
        f.preQuantOptimizations = {"spinquant"};
        QCOMPARE(errorField([&] { recipeFromFlags(f); }, &message),
                 std::string("--pre_quantization_optimization"));
        QVERIFY2(message.find("rotation, quarot, smoothquant") != std::string::npos,
                 message.c_str());
        f.preQuantOptimizations.clear();
        f.quantAlgos = {"svdquant"}; // Quark has it, Quantscope does not
        QCOMPARE(errorField([&] { recipeFromFlags(f); }), std::string("--quant_algo"));
    }

    // Quark's dataset names are downloads: refused with what they download and the way out;
    // a local file of the same name is a file.
    void quarkDatasetNames() {
        for (const char* name : {"pileval", "pileval_for_awq_benchmark",
                                 "wikitext_for_gptq_benchmark", "cnn_dailymail", "ScienceQA"}) {
            QuantFlags f;
            f.quantScheme = "int8";
            f.calibData = name;
            std::string message;
            QCOMPARE(errorField([&] { recipeFromFlags(f); }, &message), std::string("--dataset"));
            QVERIFY2(message.find("Hugging Face Hub") != std::string::npos &&
                         message.find("--dataset FILE.txt") != std::string::npos,
                     message.c_str());
        }
        const QString dir = qs::test::tempDir("datasets");
        QVERIFY(QDir::setCurrent(dir));
        QFile local(dir + "/pileval");
        QVERIFY(local.open(QIODevice::WriteOnly));
        local.close();
        rejectQuarkDatasetName("pileval", "command line", "--dataset");
        rejectQuarkDatasetName("my-calibration.txt", "command line", "--dataset");
    }
};

QS_TEST_GUILESS_MAIN(TestRecipeGroupSize)
#include "tst_recipe_groupsize.moc"
