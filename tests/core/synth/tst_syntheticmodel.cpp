// Synthetic checkpoints of every family `quantscope-cli synth --arch` offers: each one opens
// through its family's strict config parser, its module tree accounts for every stored tensor,
// the forward runs, the planted outlier channels are where the options put them, and the
// header-only mixture-of-experts presets count the real models' parameters.
#include "TestMain.h"
#include "TestSupport.h"

#include "io/Checkpoint.h"
#include "model/ModelLoader.h"
#include "synth/SyntheticModel.h"

#include <c10/core/InferenceMode.h>

#include <QtTest>

class TestSyntheticModel : public QObject {
    Q_OBJECT

private:
    static qs::SyntheticModelOptions small(const std::string& arch) {
        qs::SyntheticModelOptions o;
        o.arch = arch;
        o.hiddenSize = 64, o.intermediateSize = 96, o.numLayers = 2, o.numHeads = 4,
        o.numKvHeads = arch == "opt" ? 4 : 2, o.vocabSize = 300, o.maxPositions = 128;
        o.numExperts = 4, o.expertsPerToken = 2, o.expertIntermediateSize = 32;
        if (arch == "qwen3" || arch == "gemma2" || arch == "gemma3_text")
            o.headDim = 24; // not hidden / heads, as those families allow
        o.outDir = qs::test::tempDir(QString::fromStdString(arch)).toStdString() + "/m";
        return o;
    }

private Q_SLOTS:
    void everyArchitectureOpensAndRuns_data() {
        QTest::addColumn<QString>("arch");
        for (const std::string& a : qs::syntheticArchitectures())
            QTest::newRow(a.c_str()) << QString::fromStdString(a);
    }

    void everyArchitectureOpensAndRuns() {
        QFETCH(QString, arch);
        const qs::SyntheticModelOptions o = small(arch.toStdString());
        qs::writeSyntheticModel(o);
        const qs::ModelHandle h = qs::openModelHandle(o.outDir);
        QCOMPARE(h.config.modelType, o.arch);
        // The tree counts each stored tensor once (tied heads are not stored).
        int64_t stored = 0;
        for (const std::string& name : h.checkpoint->tensorNames())
            stored += h.checkpoint->info(name).numel();
        QCOMPARE(h.moduleTree().parameters, stored);

        c10::InferenceMode guard;
        qs::ModelRunner runner(h.instantiate({}));
        const at::Tensor ids = at::randint(o.vocabSize, {2, 40}, at::kLong);
        const at::Tensor logits = runner.forward(ids);
        QCOMPARE(logits.sizes(), (at::IntArrayRef{2, 40, o.vocabSize}));
        QVERIFY(logits.isfinite().all().item<bool>());
    }

    // The planted channels carry the outlier gain in every input norm (Gemma stores w of 1 + w).
    void outlierChannelsArePlanted_data() {
        QTest::addColumn<QString>("arch");
        QTest::newRow("qwen3_moe") << "qwen3_moe";
        QTest::newRow("gemma2") << "gemma2";
        QTest::newRow("phi3") << "phi3";
    }

    void outlierChannelsArePlanted() {
        QFETCH(QString, arch);
        qs::SyntheticModelOptions o = small(arch.toStdString());
        o.outlierChannels = {5};
        qs::writeSyntheticModel(o);
        const qs::ModelHandle h = qs::openModelHandle(o.outDir);
        at::Tensor gain = qs::loadTensor(*h.checkpoint, "model.layers.1.input_layernorm.weight",
                                         at::kFloat, at::kCPU);
        if (h.config.layout.normPlusOne)
            gain = gain + 1;
        const at::Tensor others = at::cat({gain.narrow(0, 0, 5), gain.narrow(0, 6, 64 - 6)});
        QVERIFY(gain[5].abs().item<double>() > 10 * others.abs().max().item<double>());
    }

    // Header-only MoE presets with the real models' shapes: parameter counts as published.
    void moePresetShapes() {
        qs::SyntheticModelOptions o;
        o.arch = "qwen3_moe";
        o.hiddenSize = 2048, o.intermediateSize = 6144, o.numLayers = 48, o.numHeads = 32,
        o.numKvHeads = 4, o.headDim = 128, o.vocabSize = 151936, o.maxPositions = 40960,
        o.dtype = "BF16", o.numExperts = 128, o.expertsPerToken = 8, o.expertIntermediateSize = 768,
        o.sparse = true;
        o.outDir = qs::test::tempDir("qwen3-30b").toStdString() + "/m";
        qs::writeSyntheticModel(o);
        const qs::ModuleNode tree = qs::openModelHandle(o.outDir).moduleTree();
        QCOMPARE(tree.parameters, int64_t(30532122624)); // Qwen3-30B-A3B
        std::vector<const qs::ModuleNode*> experts;
        tree.collect("expert", experts);
        QCOMPARE(int(experts.size()), 48 * 128);
        QCOMPARE(experts.front()->parameters, int64_t(3 * 768 * 2048));
    }

    // Qwen1.5-MoE-A2.7B's shape (the CLI's qwen1.5-moe-a2.7b preset), headers only: 14.3B
    // parameters as published (60 experts of 1408, a shared expert of 5632 and its gate, q/k/v
    // biases, untied head).
    void qwen2MoePresetShape() {
        qs::SyntheticModelOptions o;
        o.arch = "qwen2_moe";
        o.hiddenSize = 2048, o.intermediateSize = 5632, o.numLayers = 24, o.numHeads = 16,
        o.numKvHeads = 16, o.vocabSize = 151936, o.maxPositions = 8192, o.dtype = "BF16",
        o.numExperts = 60, o.expertsPerToken = 4, o.expertIntermediateSize = 1408,
        o.sharedExpertIntermediateSize = 5632, o.sparse = true;
        o.outDir = qs::test::tempDir("qwen15-moe").toStdString() + "/m";
        qs::writeSyntheticModel(o);
        const qs::ModelHandle h = qs::openModelHandle(o.outDir);
        QCOMPARE(h.moduleTree().parameters, int64_t(14315784192));
        QCOMPARE(h.config.moe.sharedIntermediate, int64_t(5632));
        QVERIFY(h.config.attentionBias && !h.config.moe.normTopK);
    }
};

QS_TEST_APPLESS_MAIN(TestSyntheticModel)
#include "tst_syntheticmodel.moc"
