// The block-by-block calibration pipeline: equal to whole-model fake quantization, cancellation
// within a block, unfit layers refused or skipped, bit-identical replay of a recorded recipe,
// and an analysis that finds the planted outlier channels.
#include "TestMain.h"
#include "TestSupport.h"

#include "calib/CalibrationPipeline.h"
#include "eval/Perplexity.h"
#include "eval/TextEvaluation.h"
#include "model/ModelLoader.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <c10/core/InferenceMode.h>

#include <QCryptographicHash>
#include <QFile>
#include <QtTest>

namespace {

// Applies a dynamic input spec to every linear of a resident model (the whole-model reference).
class DynamicInputHook : public qs::LinearHook {
public:
    explicit DynamicInputHook(qs::quant::QuantSpec spec) : m_spec(spec) {}
    at::Tensor onInput(const qs::LinearLayer&, const at::Tensor& x) override {
        return qs::quant::fakeQuantize(x, m_spec);
    }

private:
    qs::quant::QuantSpec m_spec;
};

QByteArray sha256(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
}

} // namespace

class TestCalibrationPipeline : public QObject {
    Q_OBJECT

private:
    QString m_model;
    QString m_text;

private Q_SLOTS:
    void initTestCase() {
        qs::SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 3, o.numHeads = 4,
        o.numKvHeads = 2, o.seed = 21;
        o.outDir = (qs::test::tempDir("pipeline") + "/model").toStdString();
        qs::writeSyntheticModel(o);
        m_model = QString::fromStdString(o.outDir);
        m_text = qs::test::sharedPath("data/tinystories-calib.txt");
    }

    // Streaming per-channel int8 weights + dynamic per-token int8 activations give exactly the
    // perplexity of quantizing the resident model in one go.
    void streamingEqualsWholeModel() {
        c10::InferenceMode guard;
        const qs::quant::QuantScheme scheme =
            qs::quant::resolveScheme("w_int8_a_int8_per_token_dynamic");
        qs::QuantFlags flags;
        flags.quantScheme = "w_int8_a_int8_per_token_dynamic";
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.recipe.evaluation.dataPath = m_text.toStdString();
        req.recipe.evaluation.seqLen = 64;
        req.recipe.evaluation.maxWindows = 6;
        req.evaluate = true;
        const qs::QuantizationOutcome streamed = qs::runQuantization(req);
        QVERIFY(streamed.perplexity);

        const qs::ModelHandle h = qs::openModelHandle(m_model.toStdString());
        const qs::LoadedTokenizer tok = qs::TokenizerLoader::load(m_model.toStdString());
        const std::vector<int32_t> ids = qs::tokenizeFile(tok, m_text.toStdString());
        // Whole model: quantize all weights of resident blocks, hook the activations.
        std::vector<std::unique_ptr<qs::DecoderBlock>> blocks;
        auto model = h.instantiate({});
        for (int i = 0; i < model->numBlocks(); ++i) {
            blocks.push_back(model->loadBlock(i));
            for (qs::LinearLayer* l : blocks.back()->linears())
                l->weight = qs::quant::fakeQuantize(l->weight, scheme.weight);
        }
        DynamicInputHook hook(*scheme.input);
        // The same arithmetic as the pipeline: all six windows in one batch of the same shape
        // (BLAS results differ across batch shapes, docs/pitfalls.md), scored by the protocol's
        // one NLL function. Equal by construction, so compared exactly.
        const int64_t L = 64, W = 6;
        const at::Tensor input = at::from_blob(const_cast<int32_t*>(ids.data()), {W * L}, at::kInt)
                                     .to(at::kLong)
                                     .view({W, L});
        qs::ForwardContext ctx = model->makeContext(L);
        ctx.hook = &hook;
        at::Tensor hs = model->embed(input);
        for (auto& b : blocks)
            hs = b->forward(hs, ctx);
        const double nll = qs::sumWindowNll(*model, hs, input, 2048);
        const double whole = std::exp(nll / double(W * (L - 1)));
        QCOMPARE(streamed.perplexity->windows, W);
        QVERIFY2(streamed.perplexity->perplexity == whole,
                 qPrintable(QString("streamed %1 whole %2")
                                .arg(streamed.perplexity->perplexity, 0, 'g', 17)
                                .arg(whole, 0, 'g', 17)));
    }

    void cancellationWithinOneBlock() {
        qs::QuantFlags flags;
        flags.quantScheme = "int8"; // static activations: observe + apply passes
        flags.calibData = m_text.toStdString();
        flags.numCalibData = 8;
        flags.seqLen = 32;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.analyze = true;
        int calls = 0;
        int callsAfterCancel = 0;
        bool cancelled = false;
        try {
            qs::runQuantization(req, [&](double fraction, const std::string&) {
                ++calls;
                if (cancelled)
                    ++callsAfterCancel;
                if (fraction > 0.4) // somewhere inside block 1 of 3
                    cancelled = true;
                return !cancelled;
            });
            QFAIL("the run ignored cancellation");
        } catch (const qs::Cancelled&) {
        }
        QVERIFY(calls > 2);
        QCOMPARE(callsAfterCancel, 0); // the run stopped at the call that asked it to
    }

    void unfitLayersRefusedOrSkipped() {
        qs::QuantFlags flags;
        flags.quantScheme = "int4_wo_32"; // down_proj has 160 inputs: 160 % 32 == 0, fits
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        qs::runQuantization(req);          // fits
        flags.quantScheme = "int4_wo_128"; // 64 % 128 != 0 everywhere
        req.recipe = qs::recipeFromFlags(flags);
        try {
            qs::runQuantization(req);
            QFAIL("accepted unfit layers");
        } catch (const qs::Error& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("model.layers.0.self_attn.q_proj") &&
                         msg.contains("does not divide in_features 64") &&
                         msg.contains("model.layers.2.mlp.down_proj"),
                     e.what());
        }
        req.recipe.unfitPolicy = "skip";
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        QCOMPARE(int(out.skipped.size()), 3 * 7);
    }

    void replayIsBitIdentical() {
        const QString base = qs::test::tempDir("replay");
        qs::QuantFlags flags;
        flags.quantScheme = "int8";
        flags.excludeLayers = {"*layers.0.mlp.down_proj"};
        flags.calibData = m_text.toStdString();
        flags.numCalibData = 6;
        flags.seqLen = 48;
        flags.kvCacheDtype = "fp8";
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.outDir = (base + "/first").toStdString();
        qs::runQuantization(req);
        QVERIFY(QFile::exists(base + "/first/quantscope_recipe.json"));
        QVERIFY(QFile::exists(base + "/first/config.json"));
        QVERIFY(QFile::exists(base + "/first/tokenizer.json"));

        qs::RunRequest replay;
        replay.modelDir = m_model.toStdString();
        replay.recipe = qs::Recipe::load((base + "/first/quantscope_recipe.json").toStdString());
        replay.outDir = (base + "/second").toStdString();
        qs::runQuantization(replay);
        for (const char* f : {"model.safetensors", "quantscope_recipe.json", "config.json"})
            QCOMPARE(sha256(base + "/second/" + f), sha256(base + "/first/" + f));
        // The excluded layer is written unchanged, a quantized one is not.
        const auto src = qs::Checkpoint::open(m_model.toStdString());
        const auto out = qs::Checkpoint::open((base + "/first").toStdString());
        auto bytes = [](const qs::Checkpoint& c, const std::string& n) {
            const qs::TensorInfo& i = c.info(n);
            return QByteArray(reinterpret_cast<const char*>(c.fileOf(n).data(i)),
                              int(i.byteSize()));
        };
        QCOMPARE(bytes(*out, "model.layers.0.mlp.down_proj.weight"),
                 bytes(*src, "model.layers.0.mlp.down_proj.weight"));
        QVERIFY(bytes(*out, "model.layers.1.mlp.down_proj.weight") !=
                bytes(*src, "model.layers.1.mlp.down_proj.weight"));
        // Replaying over an existing output replaces it; no partial folders stay behind.
        qs::runQuantization(replay);
        QCOMPARE(QDir(base).entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden).size(), 2);
    }

    void analysisFindsPlantedOutliers() {
        qs::QuantFlags flags;
        flags.quantScheme = "int8";
        flags.calibData = m_text.toStdString();
        flags.numCalibData = 8;
        flags.seqLen = 64;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.analyze = true;
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        QCOMPARE(int(out.report.layers.size()), 3 * 7);
        const auto ranking = out.report.outlierRanking();
        // The planted channels (3, 17) sit behind the RMSNorms: q/k/v and gate/up read them.
        const QString top = QString::fromStdString(ranking.front().first);
        QVERIFY2(top.endsWith("q_proj") || top.endsWith("k_proj") || top.endsWith("v_proj") ||
                     top.endsWith("gate_proj") || top.endsWith("up_proj"),
                 qPrintable(top));
        for (const qs::LayerReport& l : out.report.layers) {
            QVERIFY(l.weight.valid && l.outputLocal.valid && l.outputAccumulated.valid);
            QVERIFY(l.weight.sqnrDb > 20); // int8 per-tensor weights
            QVERIFY(l.outputLocal.cosine > 0.9);
            if (l.kind == "q_proj") {
                const auto& a = l.input.absmax;
                const size_t argmax = size_t(std::max_element(a.begin(), a.end()) - a.begin());
                QVERIFY2(argmax == 3 || argmax == 17, qPrintable(QString::number(argmax)));
                QVERIFY(l.outlierScore > 5);
            }
        }
        // Accumulated error grows with depth on the quantized stream.
        QVERIFY(out.report.layers.back().outputAccumulated.sqnrDb <=
                out.report.layers.front().outputAccumulated.sqnrDb + 1e-9);
        const nlohmann::json j = out.report.toJson();
        QVERIFY(j["layers"].contains("model.layers.1.mlp.down_proj"));
        QCOMPARE(
            j["layers"]["model.layers.0.self_attn.q_proj"]["input"]["channels"]["absmax"].size(),
            size_t(64));
    }

    void staticActivationsNeedCalibrationData() {
        qs::QuantFlags flags;
        flags.quantScheme = "int8";
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        try {
            qs::runQuantization(req);
            QFAIL("ran static activation quantization without calibration data");
        } catch (const qs::Error& e) {
            QVERIFY2(QString(e.what()).contains("calibration.data"), e.what());
        }
    }
};

QS_TEST_GUILESS_MAIN(TestCalibrationPipeline)
#include "tst_calibrationpipeline.moc"
