// The fused causal attention (model/CausalAttention.h) against the materialising path it
// replaces (`attention` in LlamaStyleModel.h: scores, additive mask, float32 softmax, matmul),
// on random inputs: grouped KV heads, sliding windows, head sizes with and without a vector tail,
// lengths that are not multiples of the loop's blocks, and strided (transposed) inputs.
#include "TestMain.h"
#include "model/CausalAttention.h"
#include "model/LlamaStyleModel.h"

#include <c10/core/InferenceMode.h>

#include <QtTest>

#include <cmath>
#include <limits>

class TestCausalAttention : public QObject {
    Q_OBJECT

private:
    // The masks DecoderModel::makeContext builds: causal, and causal within `window`.
    static at::Tensor causalMask(int64_t T, int64_t window) {
        const double inf = std::numeric_limits<double>::infinity();
        at::Tensor mask = at::triu(at::full({T, T}, -inf, at::kFloat), 1);
        if (window > 0)
            mask = mask.masked_fill(at::tril(at::ones({T, T}, at::kBool), -window), -inf);
        return mask;
    }

    // Both sides compute each score as a float32 dot product of length d in different orders:
    // each is within d * u * sum_c |q_c k_c| of the exact value (u = 2^-24), so their scaled
    // scores differ by at most E = 2 * scale * d * u * max_ij sum_c |q_ic k_jc|. Softmax inputs
    // that differ by at most E give probabilities within a factor exp(+-2E) of each other, so the
    // outputs (convex combinations of v rows) differ by at most max|v| * (exp(2E) - 1). The
    // polynomial exp (~2 ulp), the normalisation and the length-n weighted sums add at most
    // (n + 8) * u * max|v| on each side. The bound is the sum: far below what a wrong key, mask or
    // head would move (O(max|v|)).
    static double bound(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        double scale) {
        const int64_t d = q.size(-1), T = q.size(2), groups = q.size(1) / k.size(1);
        const double u = std::ldexp(1.0, -24);
        const at::Tensor kk = k.repeat_interleave(groups, 1);
        const double maxDot = at::matmul(q.abs(), kk.abs().transpose(-2, -1)).max().item<double>();
        const double maxV = v.abs().max().item<double>();
        const double e = 2.0 * scale * double(d) * u * maxDot;
        return maxV * (std::exp(2.0 * e) - 1.0) + 2.0 * double(T + 8) * u * maxV;
    }

private Q_SLOTS:
    void matchesMaterialisedAttention_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<int>("len");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<int>("window");
        QTest::newRow("stories260K shape (8 heads, 4 KV, d 8)") << 2 << 8 << 4 << 256 << 8 << 0;
        QTest::newRow("d 64, odd length") << 1 << 4 << 4 << 77 << 64 << 0;
        // Every key block of the scores (64, 32, 8, scalar) and two 64-column value blocks.
        QTest::newRow("d 128, length 150") << 1 << 2 << 1 << 150 << 128 << 0;
        QTest::newRow("d 72, window 100") << 1 << 2 << 2 << 180 << 72 << 100;
        QTest::newRow("d 5 (scalar tail), 3 groups") << 2 << 6 << 2 << 45 << 5 << 0;
        QTest::newRow("sliding window 16") << 1 << 4 << 2 << 100 << 16 << 16;
        QTest::newRow("window longer than the sequence") << 1 << 2 << 1 << 40 << 8 << 64;
        QTest::newRow("one token") << 3 << 2 << 2 << 1 << 8 << 0;
    }

    void matchesMaterialisedAttention() {
        QFETCH(int, batch);
        QFETCH(int, heads);
        QFETCH(int, kvHeads);
        QFETCH(int, len);
        QFETCH(int, headDim);
        QFETCH(int, window);
        c10::InferenceMode guard;
        at::manual_seed(7);
        // q, k, v as the blocks make them: [B, T, h, d] memory viewed as [B, h, T, d].
        const at::Tensor q = at::randn({batch, len, heads, headDim}).transpose(1, 2);
        const at::Tensor k = at::randn({batch, len, kvHeads, headDim}).transpose(1, 2);
        const at::Tensor v = at::randn({batch, len, kvHeads, headDim}).transpose(1, 2);
        const double scale = 1.0 / std::sqrt(double(headDim));
        const at::Tensor want = qs::attention(q, k, v, causalMask(len, window), scale);
        const at::Tensor got = qs::causalAttentionCpu(q, k, v, scale, window);
        QCOMPARE(got.sizes(), want.sizes());
        const double diff = (got - want).abs().max().item<double>();
        const double tol = bound(q, k, v, scale);
        QVERIFY2(tol < 1e-2, qPrintable(QString("bound %1 too loose to test").arg(tol)));
        QVERIFY2(diff <= tol, qPrintable(QString("max |diff| %1 > %2").arg(diff).arg(tol)));
        // The output is laid out as [B, T, nh, d], what the output projection reads.
        QVERIFY(got.transpose(1, 2).is_contiguous());
    }

    void windowChangesTheResult() {
        // The window is honoured: with a window of 4 the last query must differ from full
        // attention (it would not if the window were ignored).
        c10::InferenceMode guard;
        at::manual_seed(3);
        const at::Tensor q = at::randn({1, 2, 32, 8}), k = at::randn({1, 2, 32, 8});
        const at::Tensor v = at::randn({1, 2, 32, 8});
        const at::Tensor full = qs::causalAttentionCpu(q, k, v, 0.35, 0);
        const at::Tensor windowed = qs::causalAttentionCpu(q, k, v, 0.35, 4);
        QVERIFY((full.select(2, 31) - windowed.select(2, 31)).abs().max().item<double>() > 1e-3);
        // Rows 0..3 see the same keys either way.
        QVERIFY(
            at::equal(full.narrow(2, 0, 4).contiguous(), windowed.narrow(2, 0, 4).contiguous()));
    }

    void dispatchTakesAFusedPathOnFloatCpu() {
        c10::InferenceMode guard;
        const at::Tensor q = at::randn({1, 2, 8, 8}), k = at::randn({1, 1, 8, 8});
        const at::Tensor v = at::randn({1, 1, 8, 8});
        const at::Tensor out = qs::fusedCausalAttention(q, k, v, 0.35, 0, causalMask(8, 0));
        QVERIFY(out.defined());
        const at::Tensor want = qs::attention(q, k, v, causalMask(8, 0), 0.35);
        QVERIFY((out - want).abs().max().item<double>() < 1e-5);
    }
};

QS_TEST_GUILESS_MAIN(TestCausalAttention)
#include "tst_causalattention.moc"
