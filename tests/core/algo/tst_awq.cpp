// AWQ: the chosen scales against a brute-force search written out on a tiny layer, its output
// error against rounding to nearest on correlated inputs with outlier channels, and the pipeline
// on stories260K (replay identical). That applying scales leaves a model's function unchanged is
// tested once for all scaling algorithms in tst_smoothquant.cpp (bit for bit with power-of-two
// scales, to 1e-5 with SmoothQuant's).
#include "ScalingTestHarness.h"
#include "StoriesRequest.h"
#include "TestMain.h"

#include "algo/AwqTransform.h"
#include "algo/GroupOutputProbe.h"
#include "algo/ScalingGroups.h"
#include "quant/Quantize.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

using namespace qs;

namespace {

// A block that is one scaling group: x * norm -> fc.
class TinyBlock : public DecoderBlock {
public:
    TinyBlock(const at::Tensor& norm, const at::Tensor& weight) : DecoderBlock(0), m_norm(norm) {
        m_fc.name = "model.layers.0.fc";
        m_fc.kind = "fc";
        m_fc.weight = weight;
    }
    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        return applyLinear(m_fc, x * m_norm, ctx);
    }
    std::vector<LinearLayer*> linears() override { return {&m_fc}; }
    std::vector<BlockNorm> norms() override { return {{"model.layers.0.norm", &m_norm, nullptr}}; }

    at::Tensor m_norm;
    LinearLayer m_fc;
};

// v -> o under grouped-query attention: v has 2 kv heads of 8, o reads 4 query heads of 8 (each
// kv head read by two query heads), as attention hands o_proj its input.
class TinyGqaBlock : public DecoderBlock {
public:
    TinyGqaBlock(const at::Tensor& v, const at::Tensor& o) : DecoderBlock(0) {
        m_v.name = "model.layers.0.v", m_v.kind = "v", m_v.weight = v;
        m_o.name = "model.layers.0.o", m_o.kind = "o", m_o.weight = o;
    }
    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const at::Tensor v = applyLinear(m_v, x, ctx); // [..., 2 * 8]
        std::vector<int64_t> heads = v.sizes().vec();
        heads.back() = 2;
        heads.push_back(8);
        // Each query head weighs its kv head's values differently, as its own attention
        // pattern would: a per-head factor (linear in v, so the scaling stays exact).
        const at::Tensor mix = at::tensor({1.0f, 3.0f, 0.5f, 2.0f}).view({4, 1});
        const at::Tensor repeated = v.reshape(heads).repeat_interleave(2, -2) * mix;
        return applyLinear(m_o, repeated.flatten(-2), ctx);
    }
    std::vector<LinearLayer*> linears() override { return {&m_v, &m_o}; }
    std::vector<BlockNorm> norms() override { return {}; }

    LinearLayer m_v, m_o;
};

ScalingTemplate tinyTemplate() {
    ScalingTemplate t;
    t.groups = {{"norm", {"fc"}, "fc", ""}};
    return t;
}

// Correlated features (a random mixing of a few sources) with a few channels 20x larger: the
// activation outliers AWQ protects.
at::Tensor outlierInputs(int64_t windows, int64_t len, int64_t features, uint64_t seed) {
    at::manual_seed(seed);
    const at::Tensor sources = at::randn({windows * len, features / 4});
    at::Tensor x = at::matmul(sources, at::randn({features / 4, features})) +
                   0.1 * at::randn({windows * len, features});
    x.narrow(1, 5, 1).mul_(20.0);
    x.narrow(1, 40, 2).mul_(20.0);
    return x.view({windows, len, features});
}

struct Tiny {
    at::Tensor stream, norm, weight;
    quant::QuantScheme scheme = quant::resolveScheme("uint4_wo_32");
};

Tiny makeTiny() {
    Tiny t;
    t.stream = outlierInputs(4, 32, 64, 11);
    at::manual_seed(12);
    t.norm = 0.5 + at::rand({64});
    t.weight = 0.1 * at::randn({48, 64});
    return t;
}

double mse(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).pow(2).mean().item<double>();
}

} // namespace

class TestAwq : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    // The search written out: every ratio's scales, Q(W s) applied to x / s, the mean squared
    // error of the layer's output, the first minimum.
    void scalesEqualBruteForce() {
        const Tiny t = makeTiny();
        TinyBlock block(t.norm, t.weight);
        ModelConfig config;
        std::vector<LayerPlan> plans = qs::test::plansFor(block, t.scheme);
        qs::test::InputCollector collector;
        ForwardContext ctx;
        ForwardContext hooked;
        hooked.hook = &collector;
        block.forward(t.stream, hooked);
        BlockTransformInput in{block, plans, collector.inputs};
        in.config = &config;
        in.stream = t.stream;
        in.context = &ctx;
        in.maxBatchTokens = 64; // two windows per batch: the loss sums over batches
        auto groups = algo::resolveScalingGroups(block, plans, tinyTemplate(), config, "t", "f");
        algo::AwqTransform awq(nlohmann::json::object(), "test");
        const algo::AwqTransform::Choice choice = awq.searchScales(in, groups[0]);

        const at::Tensor x = (t.stream * t.norm).reshape({-1, 64});
        const at::Tensor ref = at::matmul(x, t.weight.t());
        const at::Tensor xmean = x.abs().mean(0);
        double bestLoss = 1e300, bestRatio = -1;
        at::Tensor bestScales;
        for (int i = 0; i < 20; ++i) {
            const double ratio = i / 20.0;
            at::Tensor s = xmean.pow(ratio).clamp_min(1e-4);
            s = s / (s.max() * s.min()).sqrt();
            const at::Tensor q = quant::fakeQuantize(t.weight * s.view({1, -1}), t.scheme.weight);
            const double loss = mse(at::matmul(x / s, q.t()), ref);
            if (loss < bestLoss) {
                bestLoss = loss;
                bestRatio = ratio;
                bestScales = s;
            }
        }
        qInfo("AWQ ratio %.2f (brute force %.2f), loss %.4g (brute force %.4g)", choice.ratio,
              bestRatio, choice.loss, bestLoss);
        QCOMPARE(choice.ratio, bestRatio);
        QVERIFY(bestRatio > 0.0); // the outliers make scaling worth it: a real choice
        QVERIFY(at::allclose(choice.scales, bestScales, 1e-6, 0));
        QVERIFY(std::abs(choice.loss - bestLoss) <= 1e-4 * bestLoss);
    }

    // Under GQA the candidates are measured as they are over o's 32 input channels (Quark's
    // search), and what is applied is their maximum over the two query heads of each kv head:
    // v's rows divided by it, o's columns multiplied by it repeated (scale.py scale_fc_fc).
    void gqaSearchesUnconstrainedAppliesTheMaximum() {
        at::manual_seed(21);
        const at::Tensor wv = 0.2 * at::randn({16, 24});
        const at::Tensor wo = 0.2 * at::randn({20, 32});
        TinyGqaBlock block(wv.clone(), wo.clone());
        at::Tensor stream = at::randn({4, 32, 24});
        stream.narrow(2, 3, 1).mul_(15.0); // an outlier channel: a ratio above 0 pays
        ModelConfig config;
        config.modelType = "llama"; // the family supplies moduleOutputs (unused here)
        config.numHeads = 4, config.numKvHeads = 2, config.headDim = 8;
        const quant::QuantScheme scheme = quant::resolveScheme("uint4_wo_32");
        std::vector<LayerPlan> plans = qs::test::plansFor(block, scheme);
        qs::test::InputCollector collector;
        ForwardContext ctx, hooked;
        hooked.hook = &collector;
        block.forward(stream, hooked);
        BlockTransformInput in{block, plans, collector.inputs};
        in.config = &config;
        in.stream = stream;
        in.context = &ctx;
        ScalingTemplate t;
        t.groups = {{"v", {"o"}, "o", ""}};
        auto groups = algo::resolveScalingGroups(block, plans, t, config, "t", "f");
        QCOMPARE(groups[0].kvRepeats, int64_t(2));
        algo::AwqOptions noClip;
        noClip.clip = false;
        nlohmann::json params = {{"scaling_layers", scalingGroupsToJson(t.groups)}};
        algo::AwqTransform awq(params, "test", noClip);
        const algo::AwqTransform::Choice choice = awq.searchScales(in, groups[0]);

        const at::Tensor x = collector.inputs.at("model.layers.0.o").front();
        const at::Tensor ref = at::matmul(x, wo.t());
        const at::Tensor xmean = x.abs().mean(0);
        double bestLoss = 1e300;
        at::Tensor bestScales;
        for (int i = 0; i < 20; ++i) {
            at::Tensor s = xmean.pow(i / 20.0).clamp_min(1e-4);
            s = s / (s.max() * s.min()).sqrt();
            const at::Tensor q = quant::fakeQuantize(wo * s.view({1, -1}), scheme.weight);
            const double loss = mse(at::matmul(x / s, q.t()), ref);
            if (loss < bestLoss) {
                bestLoss = loss;
                bestScales = s;
            }
        }
        QVERIFY(at::allclose(choice.scales, bestScales, 1e-6, 0));
        // Unconstrained: the two query heads of a kv head got different scales.
        QVERIFY(!at::equal(choice.scales.view({2, 2, 8}).select(1, 0),
                           choice.scales.view({2, 2, 8}).select(1, 1)));

        awq.apply(in);
        const at::Tensor kvMax = std::get<0>(choice.scales.view({2, 2, 8}).max(1)); // [2, 8]
        const at::Tensor expanded = kvMax.unsqueeze(1).expand({2, 2, 8}).reshape({32});
        QVERIFY(at::allclose(block.m_v.weight, wv / kvMax.reshape({16, 1}), 1e-6, 1e-7));
        QVERIFY(at::allclose(block.m_o.weight, wo * expanded.view({1, 32}), 1e-6, 1e-7));
        // The function is unchanged by the scales alone (before quantization).
        QVERIFY(at::allclose(block.forward(stream, ctx), at::matmul(x, wo.t()).view({4, 32, 20}),
                             1e-5, 1e-5));
    }

    // Scaled and clipped, the layer's quantized output is closer to the full-precision one than
    // rounding to nearest's; the full-precision block is unchanged by the scaling alone.
    void beatsRoundingToNearest() {
        const Tiny t = makeTiny();
        TinyBlock block(t.norm, t.weight);
        ModelConfig config;
        std::vector<LayerPlan> plans = qs::test::plansFor(block, t.scheme);
        qs::test::InputCollector collector;
        ForwardContext ctx;
        ForwardContext hooked;
        hooked.hook = &collector;
        const at::Tensor ref = block.forward(t.stream, hooked);
        BlockTransformInput in{block, plans, collector.inputs};
        in.config = &config;
        in.stream = t.stream;
        in.context = &ctx;
        auto groups = algo::resolveScalingGroups(block, plans, tinyTemplate(), config, "t", "f");
        algo::AwqOptions noClip;
        noClip.clip = false;
        algo::AwqTransform awq(nlohmann::json::object(), "test", noClip);
        const algo::AwqTransform::Choice choice = awq.searchScales(in, groups[0]);
        algo::applyScales(groups[0], choice.scales);
        const at::Tensor scaledFp = block.forward(t.stream, ctx);
        // One extra rounding per rescaled weight and norm entry (2^-24 relative each).
        QVERIFY(at::allclose(scaledFp, ref, 1e-5, 1e-5 * ref.abs().max().item<double>()));

        const at::Tensor scaled = block.m_fc.weight.clone();
        const at::Tensor xs = (t.stream * block.m_norm).reshape({-1, 64});
        const at::Tensor x = (t.stream * t.norm).reshape({-1, 64});
        const at::Tensor y = ref.reshape({-1, 48});
        const double rtn =
            mse(at::matmul(x, quant::fakeQuantize(t.weight, t.scheme.weight).t()), y);
        const double awqScaled =
            mse(at::matmul(xs, quant::fakeQuantize(scaled, t.scheme.weight).t()), y);
        const at::Tensor clipped = awq.clipWeight(plans[0], scaled, xs);
        const double awqClipped =
            mse(at::matmul(xs, quant::fakeQuantize(clipped, t.scheme.weight).t()), y);
        qInfo("output MSE: round to nearest %.4g, AWQ scales %.4g, AWQ scales + clip %.4g", rtn,
              awqScaled, awqClipped);
        QVERIFY(awqScaled < 0.9 * rtn);
        QVERIFY(awqClipped < 0.9 * rtn);
        QVERIFY((clipped.abs() <= scaled.abs()).all().item<bool>()); // clipping only shrinks
    }

    // Analyze with AWQ puts rounding to nearest of each layer as it was before AWQ beside it,
    // expressed on AWQ's rescaled inputs (Q(W) diag(s), rows divided where AWQ divided them).
    // q_proj and k_proj of block 0 see the same embeddings through the same norm in both runs
    // (AWQ does not clip them, and nothing upstream of them changed), so there that baseline is
    // the plain run's rounding computed through the rescaling: equal up to the rounding of the
    // rescaled products, n u <= 64 * 2^-24 ~ 4e-6 of each output, against an error of at least
    // ~1e-2 of it for uint4 (local SQNR < 40 dB), so the MSE within 2 * 4e-6 / 1e-2 ~ 1e-3.
    // (v_proj's outputs are divided by o_proj's scales, which weights its errors differently;
    // the layers after it see the clipped v_proj.) Over the whole model AWQ's layers must beat
    // that baseline: what it rescued.
    void analysisShowsRoundToNearestBeside() {
        RunRequest req =
            qs::test::storiesRequest("uint4_wo_32", {"*down_proj", "*lm_head"}, {}, {4, 128});
        req.analyze = true;
        const QuantizationOutcome rtn = runQuantization(req, {});
        req.recipe.algorithms.push_back({"awq", nlohmann::json::object()});
        const QuantizationOutcome awq = runQuantization(req, {});
        QCOMPARE(awq.report.layers.size(), rtn.report.layers.size());
        double awqError = 0, rtnError = 0, worst = 0;
        int compared = 0;
        for (size_t i = 0; i < awq.report.layers.size(); ++i) {
            const LayerReport& a = awq.report.layers[i];
            const LayerReport& r = rtn.report.layers[i];
            QCOMPARE(a.name, r.name);
            QVERIFY(!r.outputLocalRoundToNearest.valid);
            if (a.kind == "down_proj") { // excluded: not quantized, nothing to compare
                QVERIFY(!a.outputLocalRoundToNearest.valid);
                continue;
            }
            QVERIFY2(!a.transforms.empty() && a.outputLocalRoundToNearest.valid &&
                         a.weightRoundToNearest.valid,
                     a.name.c_str());
            awqError += a.outputLocal.mse;
            rtnError += a.outputLocalRoundToNearest.mse;
            if (a.block == 0 && (a.kind == "q_proj" || a.kind == "k_proj")) {
                const double rel = std::abs(a.outputLocalRoundToNearest.mse - r.outputLocal.mse) /
                                   r.outputLocal.mse;
                worst = std::max(worst, rel);
                QVERIFY2(rel < 1e-3, qPrintable(QStringLiteral("%1: %2 vs %3")
                                                    .arg(QString::fromStdString(a.name))
                                                    .arg(a.outputLocalRoundToNearest.mse)
                                                    .arg(r.outputLocal.mse)));
                ++compared;
            }
        }
        QCOMPARE(compared, 2);
        qInfo("q/k of block 0: baseline vs plain rounding, largest relative MSE difference %.3g; "
              "local "
              "output MSE summed over AWQ's layers: AWQ %.4g, round to nearest %.4g",
              worst, awqError, rtnError);
        QVERIFY(awqError < rtnError);
    }

    void stories260kPipeline() {
        // 4 of the 15 calibration windows: the search runs the block 20 times per group, and
        // two runs (replay) must fit the suite's time; scripts/results.sh measures all 15.
        const RunRequest req =
            qs::test::storiesRequest("uint4_wo_32", {"*down_proj", "*lm_head"},
                                     {{"awq", nlohmann::json::object()}}, {4, 256, true});
        RunRequest kept = req;
        kept.keepPlans = true;
        const QuantizationOutcome a = runQuantization(kept, {});
        const QuantizationOutcome b = runQuantization(req, {});
        QVERIFY(a.perplexity.has_value() && b.perplexity.has_value());
        // AWQ only scales and clips: every layer it ran on is then rounded to the uint4 grid,
        // its forward weight exactly its codes dequantized (AWQ's clipping alone also raises the
        // perplexity above full precision, so the bound below cannot tell unquantized layers).
        int onGrid = 0;
        for (const auto& block : a.plans)
            for (const LayerPlan& p : block) {
                if (!p.scheme)
                    continue;
                QVERIFY2(p.weight.codes.has_value(), p.name.c_str());
                QVERIFY2(at::equal(quant::dequantize(*p.weight.codes, p.scheme->weight),
                                   p.weight.dequantized),
                         p.name.c_str());
                ++onGrid;
            }
        QCOMPARE(onGrid, 5 * 6); // q, k, v, o, gate, up of 5 blocks (down_proj, lm_head excluded)
        const qs::test::StoriesBounds bounds = qs::test::storiesBounds(req);
        qInfo("stories260K uint4_wo_32 + AWQ (4 calibration windows): perplexity %.6f (round to "
              "nearest %.6f, full precision %.6f)",
              a.perplexity->perplexity, bounds.roundToNearest, bounds.fullPrecision);
        QVERIFY(a.perplexity->perplexity == b.perplexity->perplexity); // bit for bit
        QVERIFY(a.perplexity->perplexity < bounds.roundToNearest);
        QVERIFY(a.perplexity->perplexity > bounds.fullPrecision);
    }
};

// The stories260K runs take minutes on a loaded 2-core machine: Qt's per-function watchdog
// (300 s) is raised to the suite's ctest TIMEOUT (900 s, tests/CMakeLists.txt). Not a timing
// check: nothing asserts how long a run takes.
int main(int argc, char** argv) {
    qputenv("QTEST_FUNCTION_TIMEOUT", "900000");
    QCoreApplication app(argc, argv);
    TestAwq t;
    return qs::test::runSuite(&t, argc, argv);
}
#include "tst_awq.moc"
