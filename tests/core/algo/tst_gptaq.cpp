// GPTAQ against Quark 0.13's loop written out column by column (quark/torch/algorithm/gptaq),
// against GPTQ when nothing is asymmetric, on the objective it exists for, and as the pipeline's
// transform on stories260K (its two streams paired row for row).
#include "../quant/QuantTestHelpers.h"
#include "AsymmetricInputs.h"
#include "ScalingTestHarness.h"
#include "StoriesRequest.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "algo/Gptaq.h"
#include "algo/GptqTransform.h"
#include "algo/Qronos.h"
#include "quant/SchemeRegistry.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <functional>
#include <string>
#include <utility>

using namespace qs;
using namespace qs::quant;

namespace {

using qs::test::asymmetricError;
using qs::test::AsymmetricInputs;
using qs::test::asymmetricInputs;
using qs::test::uint4Groups;

at::Tensor crossOf(const qs::test::AsymmetricInputs& in) {
    return qs::test::scaledLikeTheHessian(algo::gptaqCrossPart(in.x, in.xq, in.x.size(1), "l"),
                                          in.x.size(0));
}

// Quark 0.13's Gptaq.quantize with static groups and act order (its defaults), one column at a
// time with ATen ops: dead inputs fixed, grids from the weights before any update, columns in
// decreasing Hessian diagonal, P = alpha (dXX L).triu(1) L^T, and in each lazy block
// W1[:, i:] -= err L1T[i, i:] - w P1[i, i:], then W[:, i2:] -= Err1 L^T[i1:i2, i2:] - W1 P[i1:i2,
// i2:].
at::Tensor quarkGptaq(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& cross,
                      const QuantSpec& spec, double alpha, double dampPercent, int64_t blockSize) {
    const qs::test::QuarkPrepared prep = qs::test::quarkPrepare(weight, hessian, cross, spec, true);
    at::Tensor W = prep.W, H = prep.H;
    const at::Tensor& D = prep.cross;
    const at::Tensor& perm = prep.perm;
    const int64_t cols = W.size(1);
    H = H + at::eye(cols) * (dampPercent * H.diagonal().mean().item<double>());
    const at::Tensor Hinv = at::linalg_cholesky(at::cholesky_inverse(at::linalg_cholesky(H)), true);
    const at::Tensor L = Hinv.t();
    const at::Tensor P = at::matmul(at::matmul(D, L).triu_(1) * alpha, L.t());
    at::Tensor Q = at::zeros_like(W);
    for (int64_t i1 = 0; i1 < cols; i1 += blockSize) {
        const int64_t i2 = std::min(i1 + blockSize, cols), count = i2 - i1;
        at::Tensor W1 = W.narrow(1, i1, count).clone();
        at::Tensor Err1 = at::zeros_like(W1);
        const at::Tensor L1T = Hinv.narrow(0, i1, count).narrow(1, i1, count);
        const at::Tensor P1 = P.narrow(0, i1, count).narrow(1, i1, count);
        for (int64_t i = 0; i < count; ++i) {
            const at::Tensor w = W1.narrow(1, i, 1);
            const at::Tensor q = fakeQuantize(w, prep.grid, prep.gridOf(i1 + i));
            Q.narrow(1, i1 + i, 1).copy_(q);
            const at::Tensor err = (w - q) / L1T[i][i];
            const at::Tensor step = at::matmul(err, L1T.narrow(0, i, 1).narrow(1, i, count - i)) -
                                    at::matmul(w, P1.narrow(0, i, 1).narrow(1, i, count - i));
            W1.narrow(1, i, count - i).sub_(step);
            Err1.narrow(1, i, 1).copy_(err);
        }
        if (i2 < cols)
            W.narrow(1, i2, cols - i2)
                .sub_(at::matmul(Err1, Hinv.narrow(0, i1, count).narrow(1, i2, cols - i2)) -
                      at::matmul(W1, P.narrow(0, i1, count).narrow(1, i2, cols - i2)));
    }
    return Q.index_select(1, at::argsort(perm));
}

} // namespace

class TestGptaq : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    // Two lazy blocks (the cross-block update and its P term act) and a dead input: the same
    // operations as Quark's loop in the same order, so the same bits.
    void equalsQuarksLoop() {
        AsymmetricInputs in = asymmetricInputs(512, 128, 1);
        in.x.select(1, 5).zero_(); // an input that is always zero (its diagonal is 0)
        in.xq.select(1, 5).zero_();
        const at::Tensor w = quant::test::randomWeights({24, 128}, 3, 6);
        const at::Tensor h = algo::gptqHessian({in.xq}, 128, "l");
        const at::Tensor cross = crossOf(in);
        const QuantSpec spec = uint4Groups(32);
        algo::GptaqOptions o; // alpha 0.25 as Quark's; desc_act and static_groups as its defaults
        o.descAct = true;
        o.staticGroups = true;
        o.blockSize = 64;
        const algo::GptqResult r = algo::gptaqQuantize(w, h, cross, spec, o, "l");
        const at::Tensor ref = quarkGptaq(w, h, cross, spec, o.alpha, o.dampPercent, o.blockSize);
        QCOMPARE(quant::test::firstDifference(r.dequantized, ref), int64_t(-1));
        QCOMPARE(quant::test::firstDifference(dequantize(r.codes, spec), r.dequantized),
                 int64_t(-1));
    }

    // Without asymmetry (X = X~) the cross term is zero, P is zero, and every update subtracts
    // err x row - w x 0, i.e. GPTQ's: the same bits as gptqQuantize.
    void withoutAsymmetryItIsGptq() {
        const AsymmetricInputs in = asymmetricInputs(256, 64, 2);
        const at::Tensor w = quant::test::randomWeights({16, 64}, 4, 6);
        const at::Tensor h = algo::gptqHessian({in.x}, 64, "l");
        const at::Tensor cross =
            qs::test::scaledLikeTheHessian(algo::gptaqCrossPart(in.x, in.x, 64, "l"), 256);
        QVERIFY(cross.abs().max().item<float>() == 0.0f);
        algo::GptaqOptions o;
        o.blockSize = 16;
        const algo::GptqResult a = algo::gptaqQuantize(w, h, cross, uint4Groups(32), o, "l");
        const algo::GptqResult g = algo::gptqQuantize(w, h, uint4Groups(32), o, "l");
        QVERIFY(at::equal(a.codes.codes, g.codes.codes));
        QVERIFY(at::equal(a.dequantized, g.dequantized));
    }

    // What GPTAQ is for: the layer fitted to the full-precision output from asymmetric inputs
    // lands closer to it than GPTQ, which fits the quantized inputs alone.
    void fitsTheFullPrecisionOutputBetterThanGptq() {
        const AsymmetricInputs in = asymmetricInputs(1024, 128, 5);
        const at::Tensor w = quant::test::randomWeights({32, 128}, 7, 6);
        const at::Tensor h = algo::gptqHessian({in.xq}, 128, "l");
        const algo::GptaqOptions o;
        const algo::GptqResult a = algo::gptaqQuantize(w, h, crossOf(in), uint4Groups(32), o, "l");
        const algo::GptqResult g = algo::gptqQuantize(w, h, uint4Groups(32), o, "l");
        const double gptaq = asymmetricError(in, w, a.dequantized);
        const double gptq = asymmetricError(in, w, g.dequantized);
        qInfo("||X W^T - X~ Q^T||^2: GPTAQ %.5g, GPTQ %.5g", gptaq, gptq);
        QVERIFY(gptaq < gptq);
    }

    void refusesInputsThatDoNotPair() {
        const AsymmetricInputs in = asymmetricInputs(64, 32, 3);
        QVERIFY_THROWS_EXCEPTION(Error,
                                 algo::gptaqCrossPart(in.x, in.xq.narrow(0, 0, 60), 32, "l"));
        QVERIFY_THROWS_EXCEPTION(Error, algo::gptaqCrossPart(in.x, in.xq, 16, "l"));
        const at::Tensor w = quant::test::randomWeights({8, 32}, 1);
        const at::Tensor h = algo::gptqHessian({in.xq}, 32, "l");
        QVERIFY_THROWS_EXCEPTION(
            Error, algo::gptaqQuantize(w, h, at::zeros({16, 16}), uint4Groups(32), {}, "l"));
    }

    // Without Quark's router replay the two passes would route different tokens to an expert:
    // refused by name on a mixture-of-experts model before any work (GPTQ is not).
    void refusedOnMixtureOfExperts() {
        ModelConfig moe;
        moe.moe.numExperts = 4;
        for (const algo::HessianSolver s :
             {algo::HessianSolver::Gptaq, algo::HessianSolver::Qronos}) {
            const algo::GptqTransform t(nlohmann::json::object(), "r.json", s);
            try {
                t.checkModel(moe);
                QFAIL("a mixture-of-experts model was accepted");
            } catch (const Error& e) {
                QCOMPARE(e.field(), "algorithms." + t.name());
            }
            t.checkModel(ModelConfig{}); // dense: accepted
        }
        algo::GptqTransform(nlohmann::json::object(), "r.json").checkModel(moe);
    }

    // GPTAQ and Qronos share GPTQ's scheme check; a refusal names the algorithm asked for, both
    // when the recipe is checked (the transform's checkLayer) and in the solvers themselves.
    void refusalsNameTheAlgorithmAsked() {
        const QuantScheme fp8 = resolveScheme("fp8");
        const auto refusal = [](const std::function<void()>& f) -> std::string {
            try {
                f();
            } catch (const Error& e) {
                return e.what();
            }
            return "accepted";
        };
        const std::pair<algo::HessianSolver, const char*> named[] = {
            {algo::HessianSolver::Gptq, "GPTQ quantizes integer weights"},
            {algo::HessianSolver::Gptaq, "GPTAQ quantizes integer weights"},
            {algo::HessianSolver::Qronos, "Qronos quantizes integer weights"}};
        for (const auto& [solver, expected] : named) {
            const algo::GptqTransform t(nlohmann::json::object(), "r.json", solver);
            const std::string why = refusal([&] { t.checkLayer("q_proj", fp8); });
            QVERIFY2(why.find(expected) != std::string::npos, why.c_str());
        }
        const AsymmetricInputs in = asymmetricInputs(64, 32, 3);
        const at::Tensor w = quant::test::randomWeights({8, 32}, 1);
        const at::Tensor h = algo::gptqHessian({in.xq}, 32, "l");
        const at::Tensor cross = algo::gptaqCrossPart(in.x, in.xq, 32, "l");
        std::string why = refusal([&] { algo::gptaqQuantize(w, h, cross, fp8.weight, {}, "l"); });
        QVERIFY2(why.find("GPTAQ quantizes integer weights") != std::string::npos, why.c_str());
        why = refusal([&] { algo::qronosQuantize(w, h, cross, fp8.weight, {}, "l"); });
        QVERIFY2(why.find("Qronos quantizes integer weights") != std::string::npos, why.c_str());
    }

    // The transform pairs the two streams row for row: each linear's codes through the block
    // equal gptaqQuantize on inputs rebuilt by hand, the quantized ones true-sequentially (the
    // linears before it quantized) and the full-precision ones from the reference stream through
    // the original weights. The reference stream here differs from the quantized one (as it does
    // after the first block), so a transform reading the wrong stream fails.
    void theTransformPairsTheStreams() {
        const ModelHandle handle =
            openModelHandle(qs::test::sharedPath("models/stories260K").toStdString());
        std::unique_ptr<DecoderModel> model = handle.instantiate({});
        const at::Tensor ids = qs::test::sampleTokens(2, 64, model->config().vocabSize, 5);
        const ForwardContext ctx = model->makeContext(ids.size(1));
        const at::Tensor stream = model->embed(ids);
        at::manual_seed(9);
        const at::Tensor reference = stream + 0.05 * stream.std() * at::randn_like(stream);
        std::unique_ptr<DecoderBlock> block = model->loadBlock(0);
        const QuantScheme scheme = resolveScheme("uint4_wo_32");

        auto captureWith = [&](const at::Tensor& input,
                               const std::map<std::string, at::Tensor>& weights) {
            return qs::test::captureWithWeights(*block, ctx, input, weights);
        };
        const auto quantizedInputs = captureWith(stream, {});
        const auto fullPrecision = captureWith(reference, {});
        std::vector<LayerPlan> plans = qs::test::plansFor(*block, scheme);
        for (LayerPlan& p : plans)
            if (p.kind == "down_proj")
                p.scheme.reset();
        algo::GptqTransform gptaq(nlohmann::json::object(), "test", algo::HessianSolver::Gptaq);
        QCOMPARE(gptaq.name(), std::string("gptaq"));
        BlockTransformInput in{*block, plans, quantizedInputs};
        in.config = &model->config();
        in.stream = stream;
        in.referenceStream = reference;
        in.context = &ctx;
        gptaq.apply(in);

        std::map<std::string, at::Tensor> quantizedSoFar, weightOf;
        for (LinearLayer* l : block->linears())
            weightOf[l->name] = l->weight;
        algo::GptaqOptions o; // the catalog's defaults (Quark's), as the transform reads them
        o.descAct = true;
        o.staticGroups = true;
        int checked = 0;
        for (const LayerPlan& p : plans) {
            if (!p.scheme)
                continue;
            const at::Tensor xq = captureWith(stream, quantizedSoFar).at(p.name).front();
            const at::Tensor x = fullPrecision.at(p.name).front();
            const at::Tensor& w = weightOf.at(p.name);
            QVERIFY2(at::equal(p.weight.reference, w), p.name.c_str()); // weights put back
            const at::Tensor cross = qs::test::scaledLikeTheHessian(
                algo::gptaqCrossPart(x, xq, w.size(1), p.name), x.size(0));
            const algo::GptqResult expected = algo::gptaqQuantize(
                w, algo::gptqHessian({xq}, w.size(1), p.name), cross, scheme.weight, o, p.name);
            QVERIFY2(at::equal(p.weight.codes->codes, expected.codes.codes), p.name.c_str());
            QVERIFY2(at::equal(p.weight.dequantized, expected.dequantized), p.name.c_str());
            QCOMPARE(p.transforms, std::vector<std::string>{"gptaq"});
            quantizedSoFar[p.name] = p.weight.dequantized;
            ++checked;
        }
        QCOMPARE(checked, 6);
    }

    // Through the pipeline, with all 15 calibration windows: better than rounding to nearest,
    // not better than full precision, and the same bits when replayed.
    void stories260kPipeline() {
        const RunRequest req =
            qs::test::storiesRequest("uint4_wo_32", {"*down_proj", "*lm_head"},
                                     {{"gptaq", nlohmann::json::object()}}, {15, 256, true});
        qs::test::checkBetweenBoundsAndReplays(req, "GPTAQ");
    }
};

QS_TEST_GUILESS_MAIN(TestGptaq)
#include "tst_gptaq.moc"
