// Qronos against Quark 0.13's algorithm written out with ATen ops (quark/torch/algorithm/qronos),
// its damping's eigenvalue against an exact one, on the objective it exists for, and through
// the pipeline on stories260K.
#include "../quant/QuantTestHelpers.h"
#include "AsymmetricInputs.h"
#include "StoriesRequest.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "algo/Gptq.h"
#include "algo/Qronos.h"
#include "quant/SchemeRegistry.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <cmath>

using namespace qs;
using namespace qs::quant;

namespace {

using qs::test::asymmetricError;
using qs::test::AsymmetricInputs;
using qs::test::asymmetricInputs;
using qs::test::uint4Groups;

at::Tensor crossOf(const qs::test::AsymmetricInputs& in) {
    return qs::test::scaledLikeTheHessian(algo::qronosCrossPart(in.x, in.xq, in.x.size(1), "l"),
                                          in.x.size(0));
}

// Quark's power_iteration: 30 steps from ones on H / max(H), the Rayleigh quotient scaled back.
double quarkPowerIteration(const at::Tensor& H) {
    at::Tensor b = at::ones({H.size(1)});
    const at::Tensor c = H.max().abs();
    const at::Tensor Hk = H / c;
    for (int i = 0; i < 30; ++i) {
        const at::Tensor b1 = at::mv(Hk, b);
        b = b1 / (at::norm(b1) + 1e-12);
    }
    return (at::dot(b, at::mv(Hk, b)) * c).item<double>();
}

// Quark 0.13's Qronos.quantize + qronos_inner_eager with static groups and act order (its
// defaults), statement for statement.
at::Tensor quarkQronos(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& cross,
                       const QuantSpec& spec, double alpha, double beta, int64_t blockSize) {
    const qs::test::QuarkPrepared prep =
        qs::test::quarkPrepare(weight, hessian, cross, spec, false);
    at::Tensor W = prep.W;
    const at::Tensor &H = prep.H, &G = prep.cross;
    const int64_t cols = W.size(1);
    const QuantSpec& grid = prep.grid;
    auto gridOf = [&](int64_t c) -> const QuantParams& { return prep.gridOf(c); };

    at::Tensor Hinv = H.clone();
    const double damp = alpha * quarkPowerIteration(H);
    Hinv.diagonal().add_(damp);
    Hinv = at::cholesky_inverse(at::linalg_cholesky(Hinv));
    at::Tensor Q = at::zeros_like(W);
    const at::Tensor dhi = 1.0 / H[0][0];
    at::Tensor h0 = H[0].clone();
    h0[0] = 0;
    const at::Tensor qArg = at::matmul(W, G.select(1, 0) * dhi) - at::matmul(W, h0 * dhi);
    const at::Tensor q0 = fakeQuantize(qArg.unsqueeze(1), grid, gridOf(0)).squeeze(1);
    Q.select(1, 0).copy_(q0);
    const int64_t n = cols - 1;
    at::Tensor A = Hinv.narrow(0, 1, n).narrow(1, 1, n);
    const at::Tensor b = Hinv.narrow(0, 1, n).narrow(1, 0, 1);
    A = A - at::matmul(b, b.t()) / Hinv[0][0];
    const at::Tensor gDamp = G + at::diag(at::full({cols}, damp));
    const at::Tensor gw = at::matmul(W, at::matmul(gDamp.narrow(1, 1, n), A));
    const at::Tensor hq =
        at::matmul(q0.unsqueeze(1), at::matmul(H.narrow(0, 0, 1).narrow(1, 1, n), A));
    W.narrow(1, 1, n).copy_(gw - hq);
    const at::Tensor L = at::linalg_cholesky(A * beta, true) / std::sqrt(beta);
    for (int64_t i1 = 1; i1 < cols; i1 += blockSize) {
        const int64_t i2 = std::min(i1 + blockSize, cols), count = i2 - i1;
        at::Tensor W1 = W.narrow(1, i1, count); // a view, as Quark's
        at::Tensor Err1 = at::zeros_like(W1);
        const at::Tensor Hinv1 = L.narrow(0, i1 - 1, count).narrow(1, i1 - 1, count);
        for (int64_t i = 0; i < count; ++i) {
            const at::Tensor w = W1.narrow(1, i, 1);
            const at::Tensor q = fakeQuantize(w, grid, gridOf(i1 + i));
            Q.narrow(1, i1 + i, 1).copy_(q);
            const at::Tensor err = (w - q) / Hinv1[i][i];
            W1.narrow(1, i, count - i)
                .sub_(at::matmul(err, Hinv1.narrow(0, i, 1).narrow(1, i, count - i)));
            Err1.narrow(1, i, 1).copy_(err);
        }
        if (i2 < cols)
            W.narrow(1, i2, cols - i2)
                .sub_(at::matmul(Err1, L.narrow(0, i1 - 1, count).narrow(1, i2 - 1, cols - i2)));
    }
    return Q.index_select(1, at::argsort(prep.perm));
}

} // namespace

class TestQronos : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    // Two lazy blocks after the first column, a dead input: Quark's statements in its order,
    // so the same bits.
    void equalsQuarksAlgorithm() {
        AsymmetricInputs in = asymmetricInputs(512, 128, 1);
        in.x.select(1, 7).zero_();
        in.xq.select(1, 7).zero_();
        const at::Tensor w = quant::test::randomWeights({24, 128}, 3, 6);
        const at::Tensor h = algo::gptqHessian({in.xq}, 128, "l");
        const at::Tensor cross = crossOf(in);
        algo::QronosOptions o; // Quark's defaults: alpha 1e-3, beta 1e4, desc_act, static groups
        o.blockSize = 64;
        const algo::GptqResult r = algo::qronosQuantize(w, h, cross, uint4Groups(32), o, "l");
        const at::Tensor ref =
            quarkQronos(w, h, cross, uint4Groups(32), o.alpha, o.beta, o.blockSize);
        QCOMPARE(quant::test::firstDifference(r.dequantized, ref), int64_t(-1));
        QCOMPARE(quant::test::firstDifference(dequantize(r.codes, uint4Groups(32)), r.dequantized),
                 int64_t(-1));
    }

    // The damping's eigenvalue: after 30 power iterations the Rayleigh quotient's error is at
    // most (lambda1 - lambda_n) tan^2(theta_0) (lambda2/lambda1)^60; for this Hessian the ratio
    // is below 0.5 (checked), so that term is below 1e-18 relative and what is left is float32
    // rounding of 128-term dot products, a few 1e-7 per step: 1e-5 relative bounds it.
    void largestEigenvalueByPowerIteration() {
        // Inputs with one dominant direction (a common component along a fixed unit vector),
        // as the residual stream's outlier features give real Hessians.
        AsymmetricInputs in = asymmetricInputs(1024, 128, 4);
        const at::Tensor u = at::randn({1, 128});
        const at::Tensor spiked = in.xq + 40.0 * at::randn({1024, 1}) * (u / u.norm());
        const at::Tensor h = algo::gptqHessian({spiked}, 128, "l");
        const at::Tensor exact = at::linalg_eigvalsh(h.to(at::kDouble));
        const double l1 = exact[-1].item<double>(), l2 = exact[-2].item<double>();
        QVERIFY(l2 / l1 < 0.5);
        const double estimate = algo::qronosLargestEigenvalue(h);
        qInfo("largest eigenvalue %.9g (next %.9g), estimated %.9g", l1, l2, estimate);
        QVERIFY(std::abs(estimate - l1) <= 1e-5 * l1);
    }

    // What Qronos is for: closer to the full-precision output from asymmetric inputs than GPTQ.
    void fitsTheFullPrecisionOutputBetterThanGptq() {
        const AsymmetricInputs in = asymmetricInputs(1024, 128, 5);
        const at::Tensor w = quant::test::randomWeights({32, 128}, 7, 6);
        const at::Tensor h = algo::gptqHessian({in.xq}, 128, "l");
        const algo::GptqResult q =
            algo::qronosQuantize(w, h, crossOf(in), uint4Groups(32), {}, "l");
        const algo::GptqResult g = algo::gptqQuantize(w, h, uint4Groups(32), {}, "l");
        const double qronos = asymmetricError(in, w, q.dequantized);
        const double gptq = asymmetricError(in, w, g.dequantized);
        qInfo("||X W^T - X~ Q^T||^2: Qronos %.5g, GPTQ %.5g", qronos, gptq);
        QVERIFY(qronos < gptq);
    }

    void refusesInputsThatDoNotPair() {
        const AsymmetricInputs in = asymmetricInputs(64, 32, 3);
        QVERIFY_THROWS_EXCEPTION(Error,
                                 algo::qronosCrossPart(in.x.narrow(1, 0, 16), in.xq, 32, "l"));
        const at::Tensor w = quant::test::randomWeights({8, 32}, 1);
        const at::Tensor h = algo::gptqHessian({in.xq}, 32, "l");
        QVERIFY_THROWS_EXCEPTION(
            Error, algo::qronosQuantize(w, h, at::zeros({8, 8}), uint4Groups(32), {}, "l"));
    }

    void stories260kPipeline() {
        const RunRequest req =
            qs::test::storiesRequest("uint4_wo_32", {"*down_proj", "*lm_head"},
                                     {{"qronos", nlohmann::json::object()}}, {15, 256, true});
        qs::test::checkBetweenBoundsAndReplays(req, "Qronos");
    }
};

QS_TEST_GUILESS_MAIN(TestQronos)
#include "tst_qronos.moc"
