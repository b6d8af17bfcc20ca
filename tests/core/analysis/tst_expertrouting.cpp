// Mixture-of-experts through calibration and analysis, on transformers-written checkpoints
// (../shared/models/tiny-families): each expert's linears are quantized and analysed like any
// linear, the router stays in full precision, recipes address experts by pattern, and the
// analysis counts the calibration tokens routed to each expert and flags rarely routed ones.
#include "TestMain.h"
#include "TestSupport.h"

#include "analysis/ExpertRouting.h"
#include "recipe/LayerPattern.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "run/SensitivityRun.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>
#include <map>

class TestExpertRouting : public QObject {
    Q_OBJECT

private:
    static qs::LayerReport layer(const std::string& name, int64_t tokens) {
        qs::LayerReport l;
        l.name = name;
        l.block = 0;
        l.input.tokens = tokens;
        return l;
    }

    static qs::RunRequest request(const QString& folder, const std::string& scheme) {
        qs::QuantFlags flags;
        flags.quantScheme = scheme;
        flags.calibData = qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        flags.numCalibData = 4;
        flags.seqLen = 32;
        qs::RunRequest req;
        req.modelDir = qs::test::sharedPath("models/tiny-families/" + folder).toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.analyze = true;
        return req;
    }

private Q_SLOTS:
    void sharesAndRareFlag() {
        const std::string m = "model.layers.0.mlp.experts.";
        const std::vector<qs::LayerReport> layers{layer("model.layers.0.self_attn.q_proj", 100),
                                                  layer(m + "0.gate_proj", 90),
                                                  layer(m + "0.down_proj", 90),
                                                  layer(m + "1.gate_proj", 100),
                                                  layer(m + "2.up_proj", 8),
                                                  layer(m + "3.gate_proj", 2)};
        const auto experts = qs::expertRouting(layers);
        QCOMPARE(int(experts.size()), 4);
        QCOMPARE(experts[0].expert, m + "0");
        QCOMPARE(experts[0].tokens, int64_t(90));
        // even share: (90 + 100 + 8 + 2) / 4 = 50
        QCOMPARE(experts[1].shareOfEven, 2.0);
        QVERIFY(!experts[0].rare && !experts[1].rare);
        QVERIFY(experts[2].rare && experts[3].rare); // 0.16 and 0.04 of an even share
        QVERIFY(qs::expertRouting({layer("model.layers.0.mlp.down_proj", 5)}).empty());
    }

    // Static int8 activations: every expert is observed on its own routed tokens and frozen.
    void calibratedAndAnalysed_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("downName");
        QTest::newRow("mixtral") << "mixtral"
                                 << "w2";
        QTest::newRow("qwen3_moe") << "qwen3_moe"
                                   << "down_proj";
    }

    void calibratedAndAnalysed() {
        QFETCH(QString, folder);
        QFETCH(QString, downName);
        qs::RunRequest req = request(folder, "int8");
        // experts addressed by pattern, as in Quark's MoE recipes
        const std::string pattern = "*experts.*." + downName.toStdString();
        req.recipe.exclude.push_back(pattern);
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        int experts = 0, excluded = 0;
        for (const qs::LayerReport& l : out.report.layers) {
            QVERIFY2(l.kind != "router" && l.name.find(".gate.") == std::string::npos,
                     l.name.c_str());
            if (l.name.find(".experts.") == std::string::npos)
                continue;
            ++experts;
            const bool down = qs::matchesLayerPattern(pattern, l.name);
            excluded += down ? 1 : 0;
            QCOMPARE(l.quantized, !down);
            if (!down) {
                QVERIFY(l.outputLocal.valid);
                QVERIFY(!l.outputAccumulated.valid); // no token-wise comparison across streams
            }
        }
        QCOMPARE(experts, 3 * 3 * 4); // 3 layers, 4 experts, 3 linears each
        QCOMPARE(excluded, 3 * 4);
        // every calibration token reaches top-2 experts in each layer
        std::map<int, int64_t> perBlock;
        for (const qs::ExpertTokens& e : qs::expertRouting(out.report.layers))
            perBlock[e.block] += e.tokens;
        QCOMPARE(int(perBlock.size()), 3);
        for (const auto& [block, tokens] : perBlock)
            QCOMPARE(tokens, int64_t(4 * 32 * 2));
        QVERIFY(out.report.toJson(false).contains("experts"));
    }

    // Sensitivity measures the experts of one layer together, one row per linear kind named by
    // the pattern over them; the row equals separate runs of the recipe with only that group
    // quantized (alone) and with it excluded (all-but), as every sensitivity row does.
    void sensitivityGroupsExperts() {
        qs::RunRequest req = request("mixtral", "int4_wo_32");
        req.analyze = false;
        req.recipe.evaluation.dataPath =
            qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        req.recipe.evaluation.seqLen = 64;
        req.recipe.evaluation.maxWindows = 3;
        const qs::SensitivityResult r = qs::runSensitivity(req);
        QCOMPARE(int(r.rows.size()), 3 * (4 + 3)); // per layer: q, k, v, o and w1, w3, w2
        const std::string group = "model.layers.1.block_sparse_moe.experts.*.w2";
        const auto row =
            std::find_if(r.rows.begin(), r.rows.end(),
                         [&](const qs::SensitivityRow& x) { return x.layer == group; });
        QVERIFY(row != r.rows.end());

        std::vector<const qs::ModuleNode*> linears;
        const qs::ModuleNode tree = qs::openModelHandle(req.modelDir).moduleTree();
        tree.collect("linear", linears);
        qs::RunRequest alone = req, allBut = req;
        alone.evaluate = allBut.evaluate = true;
        for (const qs::ModuleNode* n : linears)
            if (n->blockIndex >= 0 && !qs::matchesLayerPattern(group, n->name))
                alone.recipe.exclude.push_back(qs::exactLayerPattern(n->name));
        allBut.recipe.exclude.push_back(group);
        QCOMPARE(row->alonePerplexity, qs::runQuantization(alone).perplexity->perplexity);
        QCOMPARE(row->allButPerplexity, qs::runQuantization(allBut).perplexity->perplexity);
    }

    // Two calibration tokens make four routings over four experts per layer; on these fixed
    // weights and data both tokens share an expert in layer 0, so one expert sees nothing and its
    // static activation quantizer has nothing to calibrate on: an error naming the expert.
    void unreachedExpertIsAnError() {
        qs::RunRequest req = request("mixtral", "int8");
        req.recipe.calibration.numSamples = 1;
        req.recipe.calibration.seqLen = 2;
        try {
            qs::runQuantization(req);
            QFAIL("calibrated experts no token reached");
        } catch (const qs::Error& e) {
            QVERIFY2(QString(e.what()).contains(".experts.") &&
                         QString(e.what()).contains("no calibration token"),
                     e.what());
        }
        // weight-only schemes need no activation statistics: the same calibration is enough
        qs::RunRequest wo = request("mixtral", "int4_wo_32");
        wo.recipe.calibration.numSamples = 1;
        wo.recipe.calibration.seqLen = 2;
        QVERIFY(!qs::runQuantization(wo).report.layers.empty());
    }
};

QS_TEST_APPLESS_MAIN(TestExpertRouting)
#include "tst_expertrouting.moc"
