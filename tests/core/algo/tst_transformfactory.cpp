// The algorithm catalog's `runnable` flag (what the GUI enables) and the engine's transforms
// (makeBlockTransforms) agree: every runnable algorithm gets a transform with Quark's defaults,
// every other one is refused by name with the recipe field.
#include "TestMain.h"
#include "algo/TransformFactory.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

#include <QtTest>

class TestTransformFactory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void catalogSaysWhatTheEngineRuns() {
        int runnable = 0, refused = 0;
        for (const qs::AlgorithmInfo& info : qs::algorithmCatalog()) {
            const std::vector<qs::AlgorithmSpec> recipe{{info.name, nlohmann::json::object()}};
            if (info.runnable) {
                const auto transforms = qs::makeBlockTransforms(recipe, "r.json");
                QCOMPARE(transforms.size(), size_t(1));
                QCOMPARE(transforms.front()->name(), info.name);
                ++runnable;
                continue;
            }
            ++refused;
            try {
                qs::makeBlockTransforms(recipe, "r.json");
                QFAIL(qPrintable(QString::fromStdString(info.name + " is not runnable but ran")));
            } catch (const qs::Error& e) {
                QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("algorithms[0].name"));
            }
        }
        // GPTQ, GPTAQ, Qronos, AWQ, SmoothQuant, AutoSmoothQuant and rotation run; every row
        // was checked.
        QVERIFY(runnable >= 7);
        QCOMPARE(runnable + refused, int(qs::algorithmCatalog().size()));
    }

    // A name outside the catalog (the catalog has no non-runnable row today, so the refusal
    // branch above may check nothing) is refused by name, with the recipe field.
    void unknownAlgorithmRefusedByName() {
        try {
            qs::makeBlockTransforms({{"bogus", nlohmann::json::object()}}, "r.json");
            QFAIL("an unknown algorithm ran");
        } catch (const qs::Error& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("algorithms[0].name"));
        }
    }

    void stagesFollowQuarksOrder() {
        auto stageOf = [](const std::string& name) {
            for (const qs::AlgorithmInfo& info : qs::algorithmCatalog())
                if (info.name == name)
                    return info.stage;
            return -1;
        };
        QVERIFY(stageOf("rotation") < stageOf("smoothquant"));
        QCOMPARE(stageOf("smoothquant"), stageOf("autosmoothquant"));
        QVERIFY(stageOf("smoothquant") < stageOf("gptq"));
        QCOMPARE(stageOf("awq"), stageOf("gptq"));
        QCOMPARE(stageOf("gptaq"), stageOf("gptq"));
        QCOMPARE(stageOf("qronos"), stageOf("gptq"));
    }
};

QS_TEST_GUILESS_MAIN(TestTransformFactory)
#include "tst_transformfactory.moc"
