// The algorithm catalog is the one place an algorithm's parameters live with their bounds and
// defaults: what a recipe leaves out is read from it (algorithmParam), what a recipe gives wins,
// and the defaults themselves pass the catalog's own validation.
#include "TestMain.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <QtTest>

using nlohmann::json;

class TestAlgorithmCatalog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void absentParametersTakeTheCatalogDefault() {
        // Quark's dataclass defaults (GPTQConfig, SmoothQuantConfig, RotationConfig).
        QCOMPARE(qs::algorithmParam("gptq", json::object(), "damp_percent").get<double>(), 0.01);
        QCOMPARE(qs::algorithmParam("gptq", json::object(), "block_size").get<int64_t>(),
                 int64_t(128));
        QCOMPARE(qs::algorithmParam("gptq", json::object(), "desc_act").get<bool>(), true);
        QCOMPARE(qs::algorithmParam("smoothquant", json::object(), "alpha").get<double>(), 1.0);
        QCOMPARE(qs::algorithmParam("rotation", json::object(), "r1").get<bool>(), true);
        QCOMPARE(qs::algorithmParam("rotation", json::object(), "r4").get<bool>(), false);
        // A parameter the model decides (its scaling template) has no default.
        QVERIFY(qs::algorithmParam("awq", json::object(), "scaling_layers").is_null());
    }

    void givenParametersWin() {
        const json params{{"damp_percent", 0.05}, {"desc_act", false}};
        QCOMPARE(qs::algorithmParam("gptq", params, "damp_percent").get<double>(), 0.05);
        QCOMPARE(qs::algorithmParam("gptq", params, "desc_act").get<bool>(), false);
        // null means "not given" for nullable parameters
        QCOMPARE(qs::algorithmParam("autosmoothquant", json{{"compute_scale_loss", nullptr}},
                                    "compute_scale_loss")
                     .get<std::string>(),
                 std::string("MSE"));
    }

    void unknownParameterIsAnError() {
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 qs::algorithmParam("gptq", json::object(), "dampercent"));
    }

    void defaultsPassTheirOwnValidation() {
        // Every default, written out explicitly, is a valid recipe value: the table cannot hold
        // a default outside its own bounds or choices.
        int checked = 0;
        for (const qs::AlgorithmInfo& info : qs::algorithmCatalog()) {
            json explicitDefaults = json::object();
            for (const qs::AlgorithmParameterInfo& p : info.parameters)
                if (!p.defaultValue.is_null()) {
                    explicitDefaults[p.name] = p.defaultValue;
                    ++checked;
                }
            qs::validateAlgorithmParams(info.name, explicitDefaults, "catalog", "algorithms[0]");
        }
        QVERIFY(checked >= 10);
    }
};

QS_TEST_GUILESS_MAIN(TestAlgorithmCatalog)
#include "tst_algorithmcatalog.moc"
