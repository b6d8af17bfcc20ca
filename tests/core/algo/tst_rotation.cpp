// The R1 rotation of the residual stream (ResidualRotation): the full-precision logits of the
// rotated model equal the original's on stories260K and on synthetic models of every supported
// family (tied and untied heads, biases, q/k norms, a Paley and a random-orthogonal hidden size);
// refused families; the pipeline records it, replays it bit for bit and composes it with GPTQ.
#include "TestMain.h"
#include "TestSupport.h"

#include "algo/ResidualRotation.h"
#include "export/ExportFolder.h"
#include "io/Checkpoint.h"
#include "model/ModelLoader.h"
#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <QFileInfo>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace qs;

namespace {

QString synth(const QString& name, SyntheticModelOptions o) {
    o.outDir = test::tempDir(name).toStdString();
    writeSyntheticModel(o);
    return QString::fromStdString(o.outDir);
}

at::Tensor logitsOf(const QString& dir, const at::Tensor& ids,
                    std::shared_ptr<const WeightTransform> transform,
                    at::ScalarType dtype = at::kFloat) {
    const ModelHandle h = openModelHandle(dir.toStdString());
    std::unique_ptr<DecoderModel> model = h.instantiate({at::kCPU, dtype});
    if (transform)
        model->setWeightTransform(transform);
    ModelRunner runner(std::move(model));
    return runner.forward(ids);
}

std::shared_ptr<const algo::ResidualRotation> rotationFor(const QString& dir,
                                                          algo::RotationOptions o = {}) {
    const ModelHandle h = openModelHandle(dir.toStdString());
    return std::make_shared<algo::ResidualRotation>(h.config, o, "test");
}

// Max |difference| over max |reference| of fp32 logits. The rotated model computes every
// hidden state as the original times Q; its weights are rotated in float64 and rounded once to
// fp32 (2^-24 relative), and its matmuls sum the same products in another basis, so each
// K-long dot product differs by about sqrt(K) 2^-24 relative (K <= 520 here: under 2e-6),
// a little more after a few blocks, the norms and the softmax: within the 1e-5. A
// wrong sign, a norm left unfolded or a transposed rotation changes logits by O(1) (the
// negative control below shows it).
double relativeError(const at::Tensor& a, const at::Tensor& ref) {
    return ((a - ref).abs().max() / ref.abs().max()).item<double>();
}

// The rotation with the embedding left unrotated: the wrong model the comparison must catch.
class BrokenEmbedding : public WeightTransform {
public:
    explicit BrokenEmbedding(std::shared_ptr<const algo::ResidualRotation> r) : m_r(std::move(r)) {}
    at::Tensor load(const std::string& name, const Checkpoint& ckpt,
                    const ComputeOptions& compute) const override {
        if (name == "model.embed_tokens.weight")
            return loadTensor(ckpt, name, compute.dtype, compute.device);
        return m_r->load(name, ckpt, compute);
    }

private:
    std::shared_ptr<const algo::ResidualRotation> m_r;
};

Recipe storiesRecipe(const std::string& scheme) {
    Recipe recipe;
    if (!scheme.empty())
        recipe.global = quant::resolveScheme(scheme);
    recipe.calibration.dataPath = test::sharedPath("data/tinystories-calib.txt").toStdString();
    recipe.calibration.numSamples = 15;
    recipe.calibration.seqLen = 256;
    recipe.evaluation.dataPath = test::sharedPath("data/tinystories-eval.txt").toStdString();
    recipe.evaluation.seqLen = 256;
    return recipe;
}

QuantizationOutcome runStories(const Recipe& recipe, bool keepPlans = false) {
    RunRequest req;
    req.modelDir = test::sharedPath("models/stories260K").toStdString();
    req.recipe = recipe;
    req.evaluate = true;
    req.keepPlans = keepPlans;
    return runQuantization(req, {});
}

} // namespace

class TestRotation : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::manual_seed(11); }

    void stories260kLogitsUnchanged() {
        c10::InferenceMode guard;
        const QString dir = test::sharedPath("models/stories260K");
        const at::Tensor ids = at::randint(512, {2, 64}, at::kLong);
        const at::Tensor ref = logitsOf(dir, ids, nullptr);
        const auto rot = rotationFor(dir);
        QCOMPARE(rot->description(), std::string("rotation r1 hadamard 64"));
        const double err = relativeError(logitsOf(dir, ids, rot), ref);
        qInfo("stories260K rotated vs original logits: %.3g relative", err);
        QVERIFY2(err <= 1e-5, qPrintable(QString::number(err)));
        const double broken =
            relativeError(logitsOf(dir, ids, std::make_shared<BrokenEmbedding>(rot)), ref);
        QVERIFY2(broken > 1e-2, qPrintable(QString::number(broken)));
    }

    void syntheticFamiliesLogitsUnchanged() {
        c10::InferenceMode guard;
        struct Case {
            const char* arch;
            int64_t hidden, heads, kvHeads;
            bool tied;
            const char* rotation;
        };
        const Case cases[] = {
            {"llama", 256, 8, 4, false, "hadamard 256"},
            {"llama", 256, 8, 4, true, "hadamard 256"},
            {"mistral", 96, 4, 2, false, "hadamard 12x8"},
            {"qwen2", 144, 4, 2, true, "hadamard 36x4"}, // q/k/v biases
            {"qwen3", 128, 4, 2, false, "hadamard 128"}, // q/k norms
            {"llama", 188, 2, 1, false, "random orthogonal 188 (seed 0)"},
        };
        for (const Case& c : cases) {
            SyntheticModelOptions o;
            o.arch = c.arch;
            o.hiddenSize = c.hidden;
            o.intermediateSize = 2 * c.hidden + 8;
            o.numLayers = 3;
            o.numHeads = c.heads;
            o.numKvHeads = c.kvHeads;
            o.tieWordEmbeddings = c.tied;
            o.seed = 5;
            // Planted outlier channels 4x the others. At the default gain of 40 these models'
            // own fp32 forward is only within ~2e-5 of their float64 forward (measured), so a
            // 1e-5 comparison of two fp32 forwards would test the conditioning, not the
            // rotation; folding and rotating run the same code whatever the gains.
            o.outlierGain = 4.0;
            const QString dir = synth(QString("%1-%2").arg(c.arch).arg(c.hidden), o);
            const at::Tensor ids = at::randint(o.vocabSize, {2, 48}, at::kLong);
            const at::Tensor orig32 = logitsOf(dir, ids, nullptr);
            const at::Tensor orig64 = logitsOf(dir, ids, nullptr, at::kDouble);
            const double own = relativeError(orig32, orig64);
            // R1 alone, then with R2 on every head between v_proj and o_proj (head_dim 32,
            // 24 = 12 x 2, 36, 32 and 94: a random orthogonal R2).
            for (const bool r2 : {false, true}) {
                algo::RotationOptions options;
                options.r2 = r2;
                const auto rot = rotationFor(dir, options);
                QCOMPARE(rot->rotation().description(), std::string(c.rotation));
                const double err32 = relativeError(logitsOf(dir, ids, rot), orig32);
                const double err64 = relativeError(logitsOf(dir, ids, rot, at::kDouble), orig64);
                qInfo("%s hidden %lld%s%s: rotated vs original %.3g (float64 forward %.3g); "
                      "the original's own fp32 error %.3g",
                      c.arch, (long long)c.hidden, c.tied ? " tied" : "", r2 ? " r2" : "", err32,
                      err64, own);
                // The algebra, in the float64 forward: weights and matmuls in float64, only
                // the norms and the softmax round to float32 (as transformers computes them), a
                // few 2^-24 roundings per block: within 1e-6, where an algebra error is O(1).
                QVERIFY2(err64 <= 1e-6, qPrintable(QString("%1: %2").arg(c.arch).arg(err64)));
                QVERIFY2(err32 <= 1e-5, qPrintable(QString("%1: %2").arg(c.arch).arg(err32)));
            }
        }
    }

    void blockAndRandomVariantsUnchanged() {
        c10::InferenceMode guard;
        const QString dir = test::sharedPath("models/stories260K");
        const at::Tensor ids = at::randint(512, {1, 64}, at::kLong);
        const at::Tensor ref = logitsOf(dir, ids, nullptr);
        algo::RotationOptions blocks;
        blocks.rotationSize = 16;
        algo::RotationOptions random;
        random.randomR1 = true;
        algo::RotationOptions r4; // intermediate size 172 = 4 * 43: random orthogonal R4
        r4.r4 = true;
        QCOMPARE(rotationFor(dir, r4)->description(),
                 std::string("rotation r1 hadamard 64, r4 random orthogonal 172 (seed 0)"));
        algo::RotationOptions r2; // head_dim 8
        r2.r2 = true;
        QCOMPARE(rotationFor(dir, r2)->description(),
                 std::string("rotation r1 hadamard 64, r2 hadamard 8"));
        algo::RotationOptions randomR2 = r2;
        randomR2.randomR2 = true;
        algo::RotationOptions all = r2;
        all.r4 = true;
        for (const auto& o : {blocks, random, r4, r2, randomR2, all})
            QVERIFY(relativeError(logitsOf(dir, ids, rotationFor(dir, o)), ref) <= 1e-5);
        // R2 rotates what o_proj reads: its weight differs from R1's alone (a rotation left
        // out on one side would change the logits, which the line above rules out).
        const ModelHandle h = openModelHandle(dir.toStdString());
        const std::string o = "model.layers.0.self_attn.o_proj.weight";
        QVERIFY(!at::equal(rotationFor(dir, r2)->load(o, *h.checkpoint, {}),
                           rotationFor(dir)->load(o, *h.checkpoint, {})));
    }

    void unsupportedFamiliesRefused() {
        SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 128, o.numLayers = 1, o.numHeads = 4,
        o.numKvHeads = 4;
        const struct {
            const char* arch;
            const char* why;
        } cases[] = {{"opt", "LayerNorm"},
                     {"gemma2", "(1 + w)"},
                     {"phi3", "fused"},
                     {"mixtral", "mixture of experts"}};
        for (const auto& c : cases) {
            o.arch = c.arch;
            const QString dir = synth(QString("refused-") + c.arch, o);
            try {
                rotationFor(dir);
                QFAIL(c.arch);
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find(c.why) != std::string::npos, e.what());
                QVERIFY2(std::string(e.what()).find(c.arch) != std::string::npos, e.what());
            }
        }
        algo::RotationOptions bad;
        bad.rotationSize = 48; // does not divide 64
        QVERIFY_THROWS_EXCEPTION(Error, rotationFor(test::sharedPath("models/stories260K"), bad));
    }

    void recipeParametersRefusedByName() {
        for (const char* online : {"r3", "online_r1_rotation", "trainable"}) {
            try {
                algo::rotationOptionsFromParams({{online, true}}, "recipe", "algorithms[0]");
                QFAIL(online);
            } catch (const Error& e) {
                QCOMPARE(e.field(), std::string("algorithms[0].") + online);
            }
        }
        const auto o = algo::rotationOptionsFromParams({{"rotation_size", 32}, {"r1", true}},
                                                       "recipe", "algorithms[0]");
        QCOMPARE(o.rotationSize, int64_t(32));
        QVERIFY(algo::rotationOptionsFromParams({{"r2", true}}, "recipe", "algorithms[0]").r2);
        QVERIFY_THROWS_EXCEPTION(Error, algo::rotationOptionsFromParams({{"random_r2", true}},
                                                                        "recipe", "algorithms[0]"));
    }

    // Through the pipeline: the full-precision perplexity is unchanged, every plan records the
    // rotation, a replay of the recorded recipe gives the same bits, and GPTQ runs after it.
    void pipelineRecordsReplaysAndComposes() {
        Recipe plain = storiesRecipe("");
        const double fp32 = runStories(plain).perplexity->perplexity;
        plain.algorithms.push_back({"rotation", nlohmann::json::object()});
        const double rotatedFp32 = runStories(plain).perplexity->perplexity;
        qInfo("stories260K fp32 %.6f, rotated %.6f", fp32, rotatedFp32);
        // Perplexity is exp(mean NLL): the logits' 1e-5 relative bound moves it far less.
        QVERIFY(std::abs(rotatedFp32 / fp32 - 1.0) <= 1e-5);

        Recipe int8 = storiesRecipe("int8");
        int8.algorithms.push_back({"rotation", nlohmann::json::object()});
        const QuantizationOutcome a = runStories(int8, true);
        QVERIFY(!a.plans.empty());
        for (const auto& block : a.plans)
            for (const LayerPlan& p : block)
                QCOMPARE(p.transforms, std::vector<std::string>{"rotation r1 hadamard 64"});
        const Recipe replayed = Recipe::fromJson(a.recipe.toJson(), "replay");
        const QuantizationOutcome b = runStories(replayed, true);
        QVERIFY(a.perplexity->perplexity == b.perplexity->perplexity); // bit for bit
        for (size_t i = 0; i < a.plans.size(); ++i)
            for (size_t j = 0; j < a.plans[i].size(); ++j)
                QVERIFY(
                    at::equal(a.plans[i][j].weight.dequantized, b.plans[i][j].weight.dequantized));

        Recipe gptq = storiesRecipe("uint4_wo_32");
        gptq.exclude = {"*down_proj", "*lm_head"};
        gptq.algorithms.push_back({"rotation", nlohmann::json::object()});
        gptq.algorithms.push_back({"gptq", {{"desc_act", false}, {"static_groups", false}}});
        const QuantizationOutcome g = runStories(gptq, true);
        QCOMPARE(g.plans[0][0].transforms,
                 (std::vector<std::string>{"rotation r1 hadamard 64", "gptq"}));
        // GPTQ after the rotation must still do GPTQ's job on the rotated weights: beat
        // rounding to nearest of the same rotated model (same scheme, exclusions and rotation),
        // and stay above full precision (4-bit weights are not free; at or below fp32 means
        // nothing was quantized). The rotation must have reached GPTQ's weights: without it
        // GPTQ gives another perplexity.
        Recipe rotatedRtn = gptq;
        rotatedRtn.algorithms.pop_back();
        const double rtn = runStories(rotatedRtn).perplexity->perplexity;
        Recipe gptqOnly = gptq;
        gptqOnly.algorithms.erase(gptqOnly.algorithms.begin());
        const double unrotated = runStories(gptqOnly).perplexity->perplexity;
        qInfo("stories260K uint4_wo_32: rotation + GPTQ %.6f, rotation + round to nearest %.6f, "
              "GPTQ alone %.6f, fp32 %.6f",
              g.perplexity->perplexity, rtn, unrotated, fp32);
        QVERIFY(g.perplexity->perplexity < rtn);
        QVERIFY(g.perplexity->perplexity > fp32);
        QVERIFY(g.perplexity->perplexity != unrotated);

        std::swap(gptq.algorithms[0], gptq.algorithms[1]);
        QVERIFY_THROWS_EXCEPTION(Error, runStories(gptq));
    }

    // An analysed run with rotation keeps each layer's ranges before it, mapped back from the
    // rotated block: the inputs x Q^T diag(g) (x R4^T for down_proj under r4), the weights from
    // the checkpoint. They must be what the unrotated model's analysis measures. In block 0
    // the two runs see the same embeddings, rotated or not; what separates them is float32
    // rounding of the rotated forward (the rotated embedding and weights rounded once, the norm,
    // the attention and MLP in a rotated basis), each rounding u = 2^-24 of an element, spread
    // by the inverse rotation over n channels at most u sqrt(n) |x|_max; a few tens of such
    // roundings with n = 64 (172 for down_proj's R4) stay below 1e-5 of the layer's largest
    // input (measured below). The weights are the checkpoint's, so their maxima agree exactly.
    void analysisKeepsRangesBeforeRotation() {
        Recipe recipe = storiesRecipe("int8");
        recipe.calibration.numSamples = 4;
        recipe.calibration.seqLen = 128;
        RunRequest req;
        req.modelDir = test::sharedPath("models/stories260K").toStdString();
        req.recipe = recipe;
        req.analyze = true;
        const QuantizationOutcome plain = runQuantization(req, {});
        req.recipe.algorithms.push_back({"rotation", {{"r4", true}}});
        const QuantizationOutcome rotated = runQuantization(req, {});
        QCOMPARE(rotated.report.layers.size(), plain.report.layers.size());
        double worst = 0;
        int blockZero = 0;
        for (size_t i = 0; i < plain.report.layers.size(); ++i) {
            const LayerReport& p = plain.report.layers[i];
            const LayerReport& r = rotated.report.layers[i];
            QVERIFY(!p.ranges.valid());
            QCOMPARE(QString::fromStdString(r.ranges.transform), QStringLiteral("rotation"));
            QCOMPARE(r.ranges.inputAbsmaxBefore.size(), p.input.absmax.size());
            QCOMPARE(r.ranges.weightAbsmaxBefore.size(), size_t(p.shape.at(1)));
            QCOMPARE(r.ranges.weightAbsmaxAfter.size(), size_t(p.shape.at(1)));
            const double wmax = *std::max_element(r.ranges.weightAbsmaxBefore.begin(),
                                                  r.ranges.weightAbsmaxBefore.end());
            QCOMPARE(wmax,
                     std::max(std::abs(p.weightHistogram.lo), std::abs(p.weightHistogram.hi)));
            if (p.block != 0)
                continue;
            const at::Tensor before =
                at::tensor(at::ArrayRef<float>(r.ranges.inputAbsmaxBefore)).to(at::kDouble);
            const at::Tensor want = at::tensor(at::ArrayRef<float>(p.input.absmax)).to(at::kDouble);
            const double rel = ((before - want).abs().max() / want.max()).item<double>();
            worst = std::max(worst, rel);
            QVERIFY2(
                rel <= 1e-5,
                qPrintable(QStringLiteral("%1: %2").arg(QString::fromStdString(p.name)).arg(rel)));
            ++blockZero;
        }
        QCOMPARE(blockZero, 7); // q, k, v, o, gate, up and down of block 0 were compared
        qInfo("block 0: un-rotated input absmax vs the plain run's, largest difference %.3g of "
              "the layer's largest input",
              worst);
    }

    // A rotated model is written as weights: the transformed embedding, final norm and head
    // (stories260K ties the head: it becomes its own tensor, tie_word_embeddings false) next to
    // the transformed blocks. Re-opened, the fake and Quark exports compute exactly what the
    // run evaluated: the same fp32 weights (fp32 source, fp32 export), the same forward.
    void rotatedExportReopensToTheRunsPerplexity() {
        Recipe r = storiesRecipe("uint4_wo_32");
        r.exclude = {"*down_proj", "*gate_proj", "*up_proj", "lm_head"}; // 172 columns: unloadable
        r.algorithms.push_back({"rotation", nlohmann::json::object()});
        RunRequest req;
        req.modelDir = test::sharedPath("models/stories260K").toStdString();
        req.recipe = r;
        req.evaluate = true;
        req.outDir = test::tempDir("rotated-export").toStdString() + "/out";
        req.exportFormats = {"fake", "quark"};
        const double run = runQuantization(req, {}).perplexity->perplexity;
        for (const char* format : {"fake", "quark"}) {
            const std::string dir = req.outDir + "/" + format;
            const auto ckpt = Checkpoint::open(dir);
            QVERIFY2(ckpt->contains("lm_head.weight"), format);
            QVERIFY(ExportFolder::sourceConfig(dir, false)["tie_word_embeddings"] == false);
            EvalRequest e;
            e.evaluation = r.evaluation;
            QVERIFY2(evaluateModelOnText(dir, e).perplexity == run, format); // bit for bit
        }
        // Without the rotation the same scheme and exclusions give another perplexity, and the
        // written embedding is not the checkpoint's: the rotation reached the file.
        Recipe unrotated = r;
        unrotated.algorithms.clear();
        QVERIFY(run != runStories(unrotated).perplexity->perplexity);
        const auto source = Checkpoint::open(req.modelDir);
        const auto written = Checkpoint::open(req.outDir + "/fake");
        const at::Tensor embedBefore =
            loadTensor(*source, "model.embed_tokens.weight", at::kFloat, at::kCPU);
        const at::Tensor embedAfter =
            loadTensor(*written, "model.embed_tokens.weight", at::kFloat, at::kCPU);
        QCOMPARE(embedAfter.sizes(), embedBefore.sizes());
        QVERIFY(!at::equal(embedAfter, embedBefore));
    }

    // R4 rotates down_proj's input at inference: no format holds it, so the export is refused
    // before any work and nothing is written.
    void exportWithOnlineRotationRefused() {
        Recipe r = storiesRecipe("int8");
        r.algorithms.push_back({"rotation", nlohmann::json{{"r4", true}}});
        RunRequest req;
        req.modelDir = test::sharedPath("models/stories260K").toStdString();
        req.recipe = r;
        req.outDir = test::tempDir("rotated-r4-export").toStdString() + "/out";
        try {
            runQuantization(req, {});
            QFAIL("exported");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("cannot be exported") != std::string::npos &&
                         std::string(e.what()).find("r4") != std::string::npos,
                     e.what());
        }
        QVERIFY(!QFileInfo::exists(QString::fromStdString(req.outDir)));
    }
};

QS_TEST_GUILESS_MAIN(TestRotation)
#include "tst_rotation.moc"
