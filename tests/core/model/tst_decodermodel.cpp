// The forward pass of every family against an independent plain-PyTorch reference
// (tests/reference/hf_reference.py, written from transformers' maths with its own safetensors
// reader), on synthetic checkpoints with planted outliers; block-by-block streaming; shards.
#include "TestMain.h"
#include "TestSupport.h"

#include "io/Checkpoint.h"
#include "io/SafetensorsFile.h"
#include "model/DecoderModel.h"
#include "model/ModelLoader.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <c10/core/InferenceMode.h>

#include <QProcess>
#include <QtTest>

#include <fstream>

class TestDecoderModel : public QObject {
    Q_OBJECT

private:
    static at::Tensor sampleIds(int64_t batch, int64_t len, int64_t vocab) {
        return at::randint(vocab, {batch, len}, at::TensorOptions(at::kLong));
    }

    // Logits from the Python reference for `ids`.
    static at::Tensor referenceLogits(const QString& modelDir, const at::Tensor& ids) {
        const QString dir = qs::test::tempDir("ref");
        const QString idsPath = dir + "/ids.txt", outPath = dir + "/logits.txt";
        {
            std::ofstream f(idsPath.toStdString());
            for (int64_t b = 0; b < ids.size(0); ++b) {
                for (int64_t t = 0; t < ids.size(1); ++t)
                    f << ids[b][t].item<int64_t>() << ' ';
                f << '\n';
            }
        }
        QProcess py;
        py.start(qs::test::referencePython(),
                 {QStringLiteral(QS_SOURCE_DIR "/tests/reference/hf_reference.py"), "logits",
                  modelDir, idsPath, outPath});
        if (!py.waitForFinished(300000) || py.exitCode() != 0)
            qFatal("reference failed: %s", py.readAllStandardError().constData());
        std::ifstream in(outPath.toStdString());
        std::vector<float> values;
        double v;
        while (in >> v)
            values.push_back(float(v));
        return at::tensor(values).view({ids.size(0), ids.size(1), -1});
    }

    static QString synth(const QString& name, qs::SyntheticModelOptions o) {
        o.outDir = qs::test::tempDir(name).toStdString();
        qs::writeSyntheticModel(o);
        return QString::fromStdString(o.outDir);
    }

    static at::Tensor ourLogits(const QString& dir, const at::Tensor& ids,
                                at::ScalarType dtype = at::kFloat) {
        const qs::ModelHandle h = qs::openModelHandle(dir.toStdString());
        h.moduleTree();
        qs::ModelRunner runner(h.instantiate({at::kCPU, dtype}));
        return runner.forward(ids);
    }

    // Max |difference| over max |reference| of fp32 logits computed by two implementations with
    // different operation orders (ours and tests/reference/hf_reference.py). Each matmul of
    // length K rounds to within about sqrt(K) * 2^-24 relative (K <= 344 here: ~1e-6); a few
    // blocks, the norms and the softmax-weighted sums stay within 1e-5, which an error in the
    // arithmetic (a wrong RoPE, mask or scale) exceeds by orders of magnitude.
    static double relativeError(const at::Tensor& a, const at::Tensor& ref) {
        return ((a - ref).abs().max() / ref.abs().max()).item<double>();
    }

private Q_SLOTS:
    void initTestCase() { at::manual_seed(7); }

    void llamaGqaMatchesReference() {
        qs::SyntheticModelOptions o;
        o.hiddenSize = 128, o.intermediateSize = 344, o.numLayers = 3, o.numHeads = 8,
        o.numKvHeads = 2, o.vocabSize = 512, o.seed = 11;
        const QString dir = synth("llama", o);
        const at::Tensor ids = sampleIds(2, 37, o.vocabSize);
        c10::InferenceMode guard;
        const at::Tensor ours = ourLogits(dir, ids);
        const at::Tensor ref = referenceLogits(dir, ids);
        QCOMPARE(ours.sizes(), ref.sizes());
        const double err = relativeError(ours, ref);
        QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
    }

    void tiedLlamaMatchesReference() {
        qs::SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 2, o.numHeads = 4,
        o.numKvHeads = 4, o.tieWordEmbeddings = true, o.seed = 5;
        const QString dir = synth("tied", o);
        const at::Tensor ids = sampleIds(1, 50, o.vocabSize);
        c10::InferenceMode guard;
        const double err = relativeError(ourLogits(dir, ids), referenceLogits(dir, ids));
        QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
    }

    void optMatchesReference() {
        qs::SyntheticModelOptions o;
        o.arch = "opt";
        o.hiddenSize = 96, o.intermediateSize = 384, o.numLayers = 3, o.numHeads = 4,
        o.numKvHeads = 4, o.seed = 3;
        const QString dir = synth("opt", o);
        const at::Tensor ids = sampleIds(2, 29, o.vocabSize);
        c10::InferenceMode guard;
        const double err = relativeError(ourLogits(dir, ids), referenceLogits(dir, ids));
        QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
    }

    // Streaming: blocks loaded, run and released one at a time give the resident result exactly.
    void blockByBlockEqualsResident() {
        qs::SyntheticModelOptions o;
        o.numLayers = 3, o.seed = 2;
        const QString dir = synth("stream", o);
        const at::Tensor ids = sampleIds(2, 16, o.vocabSize);
        c10::InferenceMode guard;
        const at::Tensor resident = ourLogits(dir, ids);
        const qs::ModelHandle h = qs::openModelHandle(dir.toStdString());
        auto model = h.instantiate({});
        const qs::ForwardContext ctx = model->makeContext(ids.size(1));
        at::Tensor hidden = model->embed(ids);
        for (int i = 0; i < model->numBlocks(); ++i) {
            auto block = model->loadBlock(i);
            hidden = block->forward(hidden, ctx);
        } // each block released at the end of its iteration
        QVERIFY(at::equal(model->logits(hidden), resident));
    }

    void shardedEqualsSingleFile() {
        qs::SyntheticModelOptions o;
        o.numLayers = 2, o.seed = 9;
        const QString single = synth("single", o);
        o.shardBytes = 1 << 20;
        const QString sharded = synth("sharded", o);
        QVERIFY(QFile::exists(sharded + "/model.safetensors.index.json"));
        QVERIFY(QFile::exists(sharded + "/model-00001-of-00013.safetensors") ||
                QDir(sharded).entryList({"model-*.safetensors"}).size() > 1);
        const at::Tensor ids = sampleIds(1, 12, o.vocabSize);
        c10::InferenceMode guard;
        QVERIFY(at::equal(ourLogits(single, ids), ourLogits(sharded, ids)));
    }

    void bfloat16CloseToFloat32() {
        qs::SyntheticModelOptions o;
        o.numLayers = 2, o.seed = 4;
        const QString dir = synth("bf16", o);
        const at::Tensor ids = sampleIds(1, 24, o.vocabSize);
        c10::InferenceMode guard;
        const at::Tensor fp32 = ourLogits(dir, ids);
        const at::Tensor bf16 = ourLogits(dir, ids, at::kBFloat16);
        QCOMPARE(bf16.scalar_type(), at::kFloat); // logits always come back as float32
        const double err = relativeError(bf16, fp32);
        QVERIFY2(err < 0.1 && err > 0, qPrintable(QString("bf16 relative error %1").arg(err)));
    }

    void missingTensorNamed() {
        qs::SyntheticModelOptions o;
        o.numLayers = 2;
        const QString dir = synth("broken", o);
        // config says 3 layers but the checkpoint has 2: the tree names the missing tensor.
        QFile f(dir + "/config.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        auto j = nlohmann::json::parse(f.readAll().toStdString());
        f.close();
        j["num_hidden_layers"] = 3;
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray::fromStdString(j.dump()));
        f.close();
        try {
            qs::openModelHandle(dir.toStdString()).moduleTree();
            QFAIL("accepted a checkpoint missing a block");
        } catch (const qs::Error& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("model.layers.2.") && msg.contains("missing"), e.what());
        }
    }

    // A CPU weight the file stores in the compute dtype is read in place: a view of the mapping
    // with the copy's values, alive after every other owner of the checkpoint has gone; any
    // other dtype is converted into memory of its own.
    void sharedLoadReadsTheMappingInPlace() {
        qs::SyntheticModelOptions o;
        o.numLayers = 1;
        o.dtype = "F32";
        const QString dir = synth("shared-load", o);
        const std::string name = "model.layers.0.mlp.down_proj.weight";
        std::shared_ptr<const qs::Checkpoint> ckpt = qs::Checkpoint::open(dir.toStdString());
        const at::Tensor copy = qs::loadTensor(*ckpt, name, at::kFloat, at::kCPU);
        const void* mapped = ckpt->fileOf(name).data(ckpt->info(name));
        const at::Tensor view = qs::loadTensorShared(ckpt, name, at::kFloat, at::kCPU);
        QCOMPARE(view.data_ptr(), mapped);
        QVERIFY(copy.data_ptr() != mapped);
        const at::Tensor converted = qs::loadTensorShared(ckpt, name, at::kDouble, at::kCPU);
        QVERIFY(converted.data_ptr() != mapped);
        QVERIFY(at::equal(converted, copy.to(at::kDouble)));
        ckpt.reset(); // the view's deleter now holds the only reference to the mapping
        QVERIFY(at::equal(view, copy));
    }

    // A stored tensor the family does not read is refused by name, never dropped: here Qwen2's
    // q/k/v biases under a config that says llama (which has no attention_bias).
    void unusedTensorRefused() {
        qs::SyntheticModelOptions o;
        o.arch = "qwen2";
        o.numLayers = 1;
        const QString dir = synth("unused", o);
        QFile f(dir + "/config.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        auto j = nlohmann::json::parse(f.readAll().toStdString());
        f.close();
        j["model_type"] = "llama";
        for (const char* k : {"use_sliding_window", "layer_types", "sliding_window"})
            j.erase(k);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray::fromStdString(j.dump()));
        f.close();
        try {
            qs::openModelHandle(dir.toStdString()).moduleTree();
            QFAIL("accepted a checkpoint with tensors the family does not use");
        } catch (const qs::Error& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("model.layers.0.self_attn.") && msg.contains(".bias") &&
                         msg.contains("not used"),
                     e.what());
        }
    }
};

QS_TEST_APPLESS_MAIN(TestDecoderModel)
#include "tst_decodermodel.moc"
