// Scaling templates of every family, SmoothQuant's scales against the formula on a hand-built
// case, smoothed models computing the same fp32 logits, and SmoothQuant / AutoSmoothQuant
// through the pipeline on stories260K (int8 W+A, replay identical).
#include "ScalingTestHarness.h"
#include "StoriesRequest.h"
#include "TestMain.h"

#include "algo/AutoSmoothQuantTransform.h"
#include "algo/ScalingGroups.h"
#include "algo/SmoothQuantTransform.h"
#include "model/ModelFamily.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

using namespace qs;

namespace {

// Max |difference| over max |reference|.
double relativeError(const at::Tensor& a, const at::Tensor& ref) {
    return ((a - ref).abs().max() / ref.abs().max()).item<double>();
}

// SmoothQuant's scales rounded to powers of two: every rescaling is then exact in floating
// point (x / 2^k and W * 2^k round exactly as x and W did, for norms, LayerNorm biases, GQA rows,
// attention sums and SiLU/ReLU products alike), so the logits must not change by a single bit;
// any algebra error (a scale on the wrong side, a wrong GQA row) shows at once.
class PowerOfTwoSmoothing : public BlockTransform {
public:
    std::string name() const override { return "power-of-two smoothing"; }
    bool needsInputs() const override { return true; }
    void apply(BlockTransformInput& in) override {
        const ScalingTemplate t = algo::scalingTemplateFor(*in.config, {}, "t", "f");
        auto groups = algo::resolveScalingGroups(in.block, in.plans, t, *in.config, "t", "f");
        std::vector<at::Tensor> scales;
        for (const algo::ResolvedScalingGroup& g : groups) {
            std::vector<at::Tensor> weights;
            for (const LinearLayer* l : g.layers)
                weights.push_back(l->weight);
            const at::Tensor s = algo::SmoothQuantTransform::smoothScales(
                algo::channelAbsMax(in.inputs.at(g.inp->name)), weights, 0.5, 1e-3);
            scales.push_back(algo::constrainScales(g, at::exp2(at::round(at::log2(s)))));
        }
        for (size_t i = 0; i < groups.size(); ++i) {
            changed = changed || (scales[i] != 1.0f).any().item<bool>();
            algo::applyScales(groups[i], scales[i]);
        }
    }
    bool changed = false;
};

// The same scaling groups rescaled by 1 + e, e uniform in [-2^-22, 2^-22] per channel: exactly
// the identity in real arithmetic, while in fp32 every operand SmoothQuant touches (the
// preceding norm or linear divided, the following weights multiplied) is rounded once again, as
// SmoothQuant's own rescaling rounds it. The logit change it causes is this model's fp32
// sensitivity to those roundings, measured with the BLAS kernels of the machine at hand.
class RoundingNoise : public BlockTransform {
public:
    std::string name() const override { return "rounding noise"; }
    bool needsInputs() const override { return false; }
    void apply(BlockTransformInput& in) override {
        const ScalingTemplate t = algo::scalingTemplateFor(*in.config, {}, "t", "f");
        auto groups = algo::resolveScalingGroups(in.block, in.plans, t, *in.config, "t", "f");
        for (algo::ResolvedScalingGroup& g : groups) {
            const int64_t n = g.layers.front()->weight.size(1);
            const at::Tensor s = 1.0f + (at::rand({n}) * 2 - 1) * std::ldexp(1.0f, -22);
            algo::applyScales(g, algo::constrainScales(g, s));
        }
    }
};

RunRequest stories(const std::string& scheme, const std::vector<AlgorithmSpec>& algos) {
    return qs::test::storiesRequest(scheme, {"*lm_head"}, algos, {15, 256, true});
}

} // namespace

class TestSmoothQuant : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    // The covered families resolve their template on a real block; the others are refused
    // naming the layer that prevents it.
    void templatesPerFamily_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("refusedLayer");
        QTest::newRow("llama") << "llama"
                               << "";
        QTest::newRow("mistral") << "mistral"
                                 << "";
        QTest::newRow("qwen2") << "qwen2"
                               << "";
        QTest::newRow("qwen3") << "qwen3"
                               << "";
        QTest::newRow("opt") << "opt"
                             << "";
        QTest::newRow("phi3") << "phi3"
                              << "qkv_proj";
        QTest::newRow("gemma2") << "gemma2"
                                << "input_layernorm";
        QTest::newRow("mixtral") << "mixtral"
                                 << "experts";
    }

    void templatesPerFamily() {
        QFETCH(QString, arch);
        QFETCH(QString, refusedLayer);
        SyntheticModelOptions o;
        o.arch = arch.toStdString();
        o.hiddenSize = 64, o.intermediateSize = 96, o.numLayers = 1, o.numHeads = 4,
        o.numKvHeads = arch == "opt" ? 4 : 2, o.numExperts = 4, o.vocabSize = 300, o.seed = 1;
        const QString dir = qs::test::synthModel("tmpl-" + arch, o);
        const ModelHandle h = openModelHandle(dir.toStdString());
        if (!refusedLayer.isEmpty()) {
            try {
                h.family->scalingTemplate(h.config);
                QFAIL("no error");
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).contains(refusedLayer), e.what());
            }
            return;
        }
        const ScalingTemplate t = h.family->scalingTemplate(h.config);
        auto model = h.instantiate({});
        auto block = model->loadBlock(0);
        std::vector<LayerPlan> plans = qs::test::plansFor(*block, std::nullopt);
        const auto groups = algo::resolveScalingGroups(*block, plans, t, h.config, "t", "f");
        QCOMPARE(groups.size(), t.groups.size());
        QCOMPARE(int(groups.size()), 4);
        QVERIFY(groups[0].norm.weight != nullptr); // a norm precedes q, k, v
        QCOMPARE(groups[0].layers.size(), size_t(3));
        QVERIFY(groups[1].prevLinear != nullptr); // v_proj precedes o_proj
        QCOMPARE(groups[1].kvRepeats, arch == "opt" ? int64_t(1) : int64_t(2));
        QCOMPARE(groups[0].norm.bias != nullptr, arch == "opt"); // LayerNorm's bias
        // A recipe's own scaling_layers replace the template; an unknown module is refused.
        nlohmann::json params = {{"scaling_layers", scalingGroupsToJson({t.groups[0]})}};
        QCOMPARE(algo::scalingTemplateFor(h.config, params, "r", "a").groups.size(), size_t(1));
        params["scaling_layers"][0]["module2inspect"] = "decoder";
        QVERIFY_THROWS_EXCEPTION(Error, algo::scalingTemplateFor(h.config, params, "r", "a"));
    }

    // s_j = max|X_j|^alpha / max|W_j|^(1 - alpha), worked out by hand.
    void scalesFollowTheFormula() {
        const at::Tensor act = at::tensor({4.0f, 1.0f, 0.0f, 9.0f});
        const at::Tensor w1 = at::tensor({2.0f, -0.5f, 1.0f, 0.0f, -1.0f, 0.25f, 0.5f, 0.0f})
                                  .view({2, 4}); // column max |w|: 2, 0.5, 1, 0
        const at::Tensor w2 = at::tensor({1.0f, 2.0f, 0.0f, 0.0f}).view({1, 4}); // 1, 2, 0, 0
        // Group column max: 2, 2, 1, 0 -> 1e-5 (the floor).
        const at::Tensor s = algo::SmoothQuantTransform::smoothScales(act, {w1, w2}, 0.5, 1e-3);
        const at::Tensor expected = at::tensor(
            {2.0f / std::sqrt(2.0f), 1.0f / std::sqrt(2.0f), 1e-3f, 3.0f / std::sqrt(1e-5f)});
        QVERIFY2(at::allclose(s, expected, 1e-6, 0),
                 qPrintable(QString::number((s - expected).abs().max().item<double>())));
        const at::Tensor s1 = algo::SmoothQuantTransform::smoothScales(act, {w1, w2}, 1.0, 1e-3);
        QVERIFY(at::equal(s1, at::tensor({4.0f, 1.0f, 1e-3f, 9.0f})));

        // Grouped-query attention: the scales of the query heads sharing a kv head agree
        // (their maximum), and v's rows are divided by them, o's columns multiplied.
        algo::ResolvedScalingGroup g;
        g.kvRepeats = 2;
        g.headDim = 1;
        const at::Tensor c = algo::constrainScales(g, at::tensor({1.0f, 3.0f, 5.0f, 2.0f}));
        QVERIFY(at::equal(c, at::tensor({3.0f, 3.0f, 5.0f, 5.0f})));
        LinearLayer v, o;
        v.weight = at::ones({2, 3});
        v.bias = at::ones({2});
        o.weight = at::ones({2, 4});
        g.prevLinear = &v;
        g.layers = {&o};
        algo::applyScales(g, c);
        QVERIFY(at::equal(v.weight, at::tensor({1 / 3.0f, 1 / 5.0f}).view({2, 1}).expand({2, 3})));
        QVERIFY(at::equal(v.bias, at::tensor({1 / 3.0f, 1 / 5.0f})));
        QVERIFY(at::equal(o.weight, c.view({1, 4}).expand({2, 4})));
    }

    // Smoothing moves scales between ops that multiply: the fp32 logits stay what they were.
    // Each rescaled weight is rounded once more (2^-24 relative); through a few blocks, norms and
    // softmax the logits move by about 1e-6 of their largest magnitude, so 1e-5 (the issue's
    // bound) separates rounding from an error in the algebra (a scale on the wrong side, a GQA
    // row mismatch), which moves them by orders of magnitude more.
    void smoothingKeepsTheLogits_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<int>("kvHeads");
        QTest::newRow("llama GQA") << "llama" << 2;
        QTest::newRow("qwen2 (biases)") << "qwen2" << 4;
        QTest::newRow("opt (LayerNorm bias, fc1 -> fc2)") << "opt" << 4;
    }

    void powerOfTwoScalesKeepEveryBit() {
        QFETCH(QString, arch);
        QFETCH(int, kvHeads);
        SyntheticModelOptions o;
        o.arch = arch.toStdString();
        o.hiddenSize = 64, o.intermediateSize = 128, o.numLayers = 2, o.numHeads = 8,
        o.numKvHeads = kvHeads, o.vocabSize = 300, o.seed = 4;
        const QString dir = qs::test::synthModel("exact-" + arch, o);
        const at::Tensor ids = qs::test::sampleTokens(2, 24, o.vocabSize, 3);
        c10::InferenceMode guard;
        const at::Tensor ref = qs::test::logitsWith(dir, ids, nullptr);
        PowerOfTwoSmoothing p2;
        const at::Tensor smoothed = qs::test::logitsWith(dir, ids, &p2);
        QVERIFY(p2.changed); // scales other than 1 were applied
        QVERIFY(at::equal(smoothed, ref));
    }

    void powerOfTwoScalesKeepEveryBit_data() { smoothingKeepsTheLogits_data(); }

    void smoothingKeepsTheLogits() {
        QFETCH(QString, arch);
        QFETCH(int, kvHeads);
        SyntheticModelOptions o;
        o.arch = arch.toStdString();
        o.hiddenSize = 64, o.intermediateSize = 128, o.numLayers = 2, o.numHeads = 8,
        o.numKvHeads = kvHeads, o.vocabSize = 300, o.seed = 4;
        const QString dir = qs::test::synthModel("keep-" + arch, o);
        const at::Tensor ids = qs::test::sampleTokens(2, 24, o.vocabSize, 3);
        c10::InferenceMode guard;
        const at::Tensor ref = qs::test::logitsWith(dir, ids, nullptr);
        algo::SmoothQuantTransform sq({{"alpha", 0.5}}, "test");
        std::vector<std::vector<LayerPlan>> plans;
        const at::Tensor smoothed = qs::test::logitsWith(dir, ids, &sq, std::nullopt, &plans);
        const double err = relativeError(smoothed, ref);
        at::manual_seed(11);
        RoundingNoise noise;
        const double floor = relativeError(qs::test::logitsWith(dir, ids, &noise), ref);
        qInfo("%s: relative logit error after smoothing %.3g, rounding floor %.3g",
              qPrintable(arch), err, floor);
        // The 1e-5, unless this model's own rounding floor is above it: the planted
        // outlier channels make the GQA llama so ill-conditioned that rounding the touched
        // operands once more moves its logits by 8e-5 to 2.5e-4 depending on the OpenBLAS
        // kernel (Sandybridge, Haswell, SkylakeX), and SmoothQuant rounds each of them once as
        // well. Measured, SmoothQuant stays within 1.7x of that floor on every kernel; 4x is the
        // margin. The algebra itself is checked bit for bit by powerOfTwoScalesKeepEveryBit, and
        // an algebra error moves logits by O(1).
        const double bound = std::max(1e-5, 4 * floor);
        QVERIFY2(err < bound, qPrintable(QString("%1 >= %2").arg(err).arg(bound)));
        QVERIFY(!at::equal(smoothed, ref)); // the weights did change
        QCOMPARE(plans.front().front().transforms.front(),
                 std::string("smoothquant(alpha=0.5, scale_clamp_min=0.001)"));
    }

    // The fake-quantized checkpoint of a smoothed model carries the rescaled norms (written from
    // the block, not copied from the source): evaluated as a plain model it gives the perplexity
    // the engine measured, bit for bit (the same weights, the same forward).
    void exportCarriesTheSmoothedNorms() {
        RunRequest req = stories("uint4_wo_32", {{"smoothquant", {{"alpha", 0.5}}}});
        req.recipe.exclude = {"*down_proj", "*lm_head"};
        req.recipe.calibration.numSamples = 4;
        const QuantizationOutcome engine = runQuantization(req, {});
        req.evaluate = false;
        req.outDir = qs::test::tempDir("sq-export").toStdString() + "/out";
        runQuantization(req, {});
        RunRequest plain = stories("uint4_wo_32", {});
        plain.recipe.global.reset();
        plain.recipe.exclude.clear();
        plain.modelDir = req.outDir;
        const QuantizationOutcome exported = runQuantization(plain, {});
        QVERIFY(engine.perplexity && exported.perplexity);
        QVERIFY(exported.perplexity->perplexity == engine.perplexity->perplexity);
    }

    // An analysed run keeps each smoothed layer's input and weight ranges from before
    // SmoothQuant. Recomputing SmoothQuant's scales from those "before" ranges with the same
    // float32 operations gives the engine's scales bit for bit (maxima are exact), so:
    //  - the weight's column absmax after is exactly fl(before * s): rounding is monotonic, so
    //    the largest |w s| of a column is the rounded product of its largest |w| (q, k, gate,
    //    o and down; v and up also have their rows divided by the next group's scales);
    //  - the input's channel absmax the analysis measured after is before / s up to the
    //    rounding of the rescaled forward: for q/k/v and gate/up, x1 = n fl(g / s) and the
    //    test's fl(fl(n g) / s) are each a few roundings (at most 4 u, u = 2^-24) off the
    //    exact n g / s, so within 8 u = 4.8e-7 of each other (measured 4.3e-7; allowed 1e-6);
    //    o_proj and down_proj see dot products over 64 and 172 rescaled terms
    //    (gamma_n = n u <= 1.1e-5 of the sum of |terms|, before softmax and SiLU; measured
    //    1.8e-6): allowed 1e-4.
    void analysisKeepsRangesBeforeAndAfter() {
        RunRequest req = stories("int8", {{"smoothquant", {{"alpha", 0.5}}}});
        req.evaluate = false;
        req.analyze = true;
        req.recipe.calibration.numSamples = 4;
        req.recipe.calibration.seqLen = 128;
        const QuantizationOutcome out = runQuantization(req, {});
        std::map<std::pair<int, std::string>, const LayerReport*> byKind;
        for (const LayerReport& l : out.report.layers)
            byKind[{l.block, l.kind}] = &l;
        const auto tensor = [](const std::vector<float>& v) {
            return at::tensor(at::ArrayRef<float>(v.data(), v.size()));
        };
        struct Group {
            std::vector<std::string> layers; // the first is inp
            bool gqa = false;
        };
        const std::vector<Group> groups = {{{"q_proj", "k_proj", "v_proj"}},
                                           {{"o_proj"}, true},
                                           {{"gate_proj", "up_proj"}},
                                           {{"down_proj"}}};
        double worstNormFed = 0, worstDeep = 0;
        int checked = 0;
        for (int b = 0; b < 5; ++b) {
            for (const Group& g : groups) {
                const LayerReport& inp = *byKind.at({b, g.layers.front()});
                QCOMPARE(QString::fromStdString(inp.ranges.transform),
                         QStringLiteral("SmoothQuant"));
                at::Tensor wmax;
                for (const std::string& k : g.layers) {
                    const at::Tensor w = tensor(byKind.at({b, k})->ranges.weightAbsmaxBefore);
                    wmax = wmax.defined() ? at::maximum(wmax, w) : w;
                }
                const at::Tensor x = tensor(inp.ranges.inputAbsmaxBefore);
                // SmoothQuantTransform::smoothScales' operations, then the GQA constraint (4 kv
                // heads, 2 query heads each, head_dim 8).
                at::Tensor s = (x.pow(0.5) / wmax.clamp_min(1e-5).pow(0.5)).clamp_min(1e-3);
                if (g.gqa)
                    s = std::get<0>(s.view({4, 2, 8}).max(1, true)).expand({4, 2, 8}).reshape({-1});
                for (const std::string& k : g.layers) {
                    const LayerReport& l = *byKind.at({b, k});
                    QVERIFY(l.ranges.valid());
                    // Every layer of the group was given the same inputs.
                    QCOMPARE(l.ranges.inputAbsmaxBefore, inp.ranges.inputAbsmaxBefore);
                    const at::Tensor before = tensor(l.ranges.inputAbsmaxBefore);
                    const at::Tensor after = tensor(l.input.absmax);
                    QCOMPARE(after.numel(), before.numel());
                    const double rel =
                        ((after - before / s).abs() / (before / s)).max().item<double>();
                    const bool deep = k == "o_proj" || k == "down_proj";
                    (deep ? worstDeep : worstNormFed) =
                        std::max(deep ? worstDeep : worstNormFed, rel);
                    QVERIFY2(rel <= (deep ? 1e-4 : 1e-6),
                             qPrintable(QStringLiteral("%1 block %2: %3")
                                            .arg(QString::fromStdString(k))
                                            .arg(b)
                                            .arg(rel)));
                    if (k != "v_proj" && k != "up_proj") {
                        const at::Tensor wBefore = tensor(l.ranges.weightAbsmaxBefore);
                        QVERIFY(at::equal(tensor(l.ranges.weightAbsmaxAfter), wBefore * s));
                    }
                    ++checked;
                }
            }
        }
        QCOMPARE(checked, 5 * 7);
        qInfo("input absmax after vs before / s, largest relative difference: %.3g (norm-fed), "
              "%.3g (o_proj, down_proj)",
              worstNormFed, worstDeep);
        // The flattening the plots show: q_proj's input of block 0 is far less spread after.
        const LayerReport& q = *byKind.at({0, "q_proj"});
        const auto spread = [&](const std::vector<float>& v) {
            const at::Tensor t = tensor(v);
            return (t.max() / t.median()).item<double>();
        };
        QVERIFY(spread(q.input.absmax) < spread(q.ranges.inputAbsmaxBefore));
        // Without SmoothQuant nothing is kept.
        req.recipe.algorithms.clear();
        for (const LayerReport& l : runQuantization(req, {}).report.layers)
            QVERIFY(!l.ranges.valid());
    }

    // int8 W+A per-tensor static on stories260K: SmoothQuant and AutoSmoothQuant against naive
    // rounding, replay identical on CPU. stories260K has no outlier channels, and smoothing does
    // not beat naive rounding on it (docs/results.md); what must hold is that smoothing keeps
    // the function and only moves where int8's noise falls. Its perplexity then lies above full
    // precision (int8 W+A noise is not free) and within int8's own cost of naive rounding:
    // |smoothed - naive| <= naive - fp32 (0.052 of 5.80 here; measured differences 0.011 at
    // most). A rescaling applied on one side only, or a wrong GQA row, changes the function by
    // O(1) and the perplexity by far more.
    void stories260kInt8() {
        const QuantizationOutcome naive = runQuantization(stories("int8", {}), {});
        const QuantizationOutcome sq =
            runQuantization(stories("int8", {{"smoothquant", {{"alpha", 0.5}}}}), {});
        const QuantizationOutcome again =
            runQuantization(stories("int8", {{"smoothquant", {{"alpha", 0.5}}}}), {});
        const QuantizationOutcome asq =
            runQuantization(stories("int8", {{"autosmoothquant", nlohmann::json::object()}}), {});
        QVERIFY(naive.perplexity && sq.perplexity && again.perplexity && asq.perplexity);
        const RunRequest req = stories("int8", {});
        EvalRequest e;
        e.evaluation = req.recipe.evaluation;
        const double fp32 = evaluateModelOnText(req.modelDir, e).perplexity;
        const double n = naive.perplexity->perplexity;
        qInfo("stories260K int8: fp32 %.6f, naive %.6f, SmoothQuant(0.5) %.6f, AutoSmoothQuant "
              "%.6f",
              fp32, n, sq.perplexity->perplexity, asq.perplexity->perplexity);
        QVERIFY(sq.perplexity->perplexity == again.perplexity->perplexity); // bit for bit
        QVERIFY(n > fp32);
        for (const double p : {sq.perplexity->perplexity, asq.perplexity->perplexity}) {
            QVERIFY2(p > fp32, qPrintable(QString::number(p, 'f', 6)));
            QVERIFY2(std::abs(p - n) <= n - fp32, qPrintable(QString::number(p, 'f', 6)));
        }
    }

    // Where smoothing exists to help: a model whose q/k/v and gate/up inputs have two channels
    // 40 times the others (the synthetic model's planted RMSNorm gains). Per-tensor static int8
    // then sets the activation step by those two channels, ~40x what the other 62 need;
    // SmoothQuant(0.5) divides each channel by sqrt(its range / its weights' range), shrinking
    // that spread to about sqrt(40) ~ 6x, so the activation rounding noise, and the KL to full
    // precision it causes, must fall well below naive rounding's. Asserted: at most half of
    // naive rounding's KL for SmoothQuant(0.5) and for AutoSmoothQuant (whose per-layer search
    // includes alpha 0.5; measured 0.25x and 0.40x of 0.061). Perplexity is no measure on a
    // random-weight model (it sits near the vocabulary size); KL is.
    void outlierModelSmoothingBeatsNaiveRounding() {
        SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 2, o.numHeads = 4,
        o.numKvHeads = 2, o.seed = 1;
        QCOMPARE(o.outlierGain, 40.0);
        o.outDir = (qs::test::tempDir("sq-outliers") + "/model").toStdString();
        writeSyntheticModel(o);
        const auto klOf = [&](const std::vector<AlgorithmSpec>& algos) {
            RunRequest req = stories("int8", algos);
            req.modelDir = o.outDir;
            req.recipe.calibration.numSamples = 4;
            req.recipe.calibration.seqLen = 128;
            req.recipe.evaluation.seqLen = 128;
            req.recipe.evaluation.maxWindows = 8;
            const QuantizationOutcome out = runQuantization(req, {});
            return out.fidelity ? out.fidelity->klMean.value : -1.0;
        };
        const double naive = klOf({});
        const double sq = klOf({{"smoothquant", {{"alpha", 0.5}}}});
        const double asq = klOf({{"autosmoothquant", nlohmann::json::object()}});
        qInfo("outlier model int8, mean KL to fp32: naive %.6f, SmoothQuant(0.5) %.6f, "
              "AutoSmoothQuant %.6f",
              naive, sq, asq);
        QVERIFY(naive > 0);
        QVERIFY2(sq >= 0 && sq <= 0.5 * naive, qPrintable(QString::number(sq)));
        QVERIFY2(asq >= 0 && asq <= 0.5 * naive, qPrintable(QString::number(asq)));
    }
};

// The stories260K runs take minutes on a loaded 2-core machine: Qt's per-function watchdog
// (300 s) is raised to the suite's ctest TIMEOUT (900 s, tests/CMakeLists.txt). Not a timing
// check: nothing asserts how long a run takes.
int main(int argc, char** argv) {
    qputenv("QTEST_FUNCTION_TIMEOUT", "900000");
    QCoreApplication app(argc, argv);
    TestSmoothQuant t;
    return qs::test::runSuite(&t, argc, argv);
}
#include "tst_smoothquant.moc"
