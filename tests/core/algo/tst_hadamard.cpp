// Hadamard matrices built by Sylvester's and Paley's constructions (exact integer checks), the
// seeded random orthogonal fallback, and the structured rotation against its dense matrix.
#include "TestMain.h"
#include "algo/Hadamard.h"

#include <ATen/ATen.h>

#include <QtTest>

#include <limits>

using namespace qs::algo;

class TestHadamard : public QObject {
    Q_OBJECT

private:
    static void checkExact(int64_t n) {
        const at::Tensor h = hadamardMatrix(n);
        QCOMPARE(h.size(0), n);
        QCOMPARE(h.size(1), n);
        QVERIFY(((h == 1) | (h == -1)).all().item<bool>());
        // In float64 every partial sum of +-1 products is an integer of magnitude <= n < 2^53,
        // so BLAS computes H H^T exactly whatever its order of summation.
        const at::Tensor hd = h.to(at::kDouble);
        const at::Tensor hht = at::matmul(hd, hd.t());
        QVERIFY2(at::equal(hht, at::eye(n, at::kDouble) * double(n)),
                 qPrintable(QString::number(n)));
    }

private Q_SLOTS:
    void powersOfTwoAreSylvester() {
        for (int64_t n = 1; n <= 512; n *= 2) {
            const auto b = hadamardBase(n);
            QVERIFY(b.has_value());
            QCOMPARE(b->order, int64_t(1));
            checkExact(n);
        }
    }

    void paleyOrdersAndTheirMultiples() {
        // The orders the issue names, each with the construction expected of it.
        const struct {
            int64_t n, q;
            int paley;
        } cases[] = {{12, 11, 1}, {20, 19, 1}, {28, 13, 2}, {36, 17, 2},
                     {52, 25, 2}, {60, 59, 1}, {100, 49, 2}}; // 25, 49: GF(p^2)
        for (const auto& c : cases) {
            const auto b = hadamardBase(c.n);
            QVERIFY(b.has_value());
            QCOMPARE(b->order, c.n);
            QCOMPARE(b->q, c.q);
            QCOMPARE(b->paley, c.paley);
            for (int64_t k = 1; k <= 8; k *= 2)
                checkExact(c.n * k);
        }
        // 40 = 20 * 2 and 576 = 36 * 16 (a real hidden size) come from a base times 2^k.
        QCOMPARE(hadamardBase(40)->order, int64_t(20));
        QCOMPARE(hadamardBase(576)->order, int64_t(36));
        checkExact(40);
        checkExact(576);
        checkExact(3 * 1024); // 12 * 256, Llama-3.2-3B's hidden size
    }

    void ordersWithoutConstructionAreSaid() {
        // 92 needs Williamson's construction; orders not divisible by 4 have none at all.
        QVERIFY(!hadamardBase(92).has_value());
        QVERIFY(!hadamardBase(6).has_value());
        QVERIFY(!hadamardBase(188).has_value()); // 47 * 4: no base of 188 is q + 1 or 2(q + 1)
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, hadamardMatrix(92));
    }

    void randomOrthogonalIsOrthogonalAndSeeded() {
        for (int64_t n : {6, 92, 188}) {
            const at::Tensor q = randomOrthogonal(n, 5);
            // Householder QR in float64 gives ||Q^T Q - I|| <= c n u with a small constant c
            // (Higham, Accuracy and Stability, Thm 19.4), and forming Q Q^T adds about n u per
            // entry: 8 n u bounds both with room for the constant.
            const double u = std::numeric_limits<double>::epsilon() / 2;
            const double err =
                (at::matmul(q, q.t()) - at::eye(n, at::kDouble)).abs().max().item<double>();
            QVERIFY2(err <= 8.0 * double(n) * u, qPrintable(QString::number(err)));
            QVERIFY(at::equal(q, randomOrthogonal(n, 5)));
            QVERIFY(!at::equal(q, randomOrthogonal(n, 6)));
        }
    }

    void structuredRotationEqualsDenseMatrix() {
        at::manual_seed(3);
        for (int64_t n : {64, 12 * 8, 36 * 4, 52 * 2, 92}) {
            const OrthogonalRotation r(n, 0, false, 0);
            QCOMPARE(r.isHadamard(), n != 92);
            const at::Tensor x = at::randn({5, 3, n}, at::kDouble);
            at::Tensor dense = n == 92 ? randomOrthogonal(92, 0)
                                       : hadamardMatrix(n).to(at::kDouble) / std::sqrt(double(n));
            // Both sides sum n products of float64 numbers of size ~1 in different orders: each
            // is within n u |x| |Q| of the exact value, so 2 n u max|x| bounds the difference.
            const double u = std::numeric_limits<double>::epsilon() / 2;
            const double tol = 2.0 * double(n) * u * x.abs().max().item<double>();
            const double err = (r.apply(x) - at::matmul(x, dense)).abs().max().item<double>();
            QVERIFY2(err <= tol, qPrintable(QString("%1: %2 > %3").arg(n).arg(err).arg(tol)));
            // Orthogonal: x Q Q^T = x.
            const at::Tensor q = r.matrix();
            QVERIFY((at::matmul(q, q.t()) - at::eye(n, at::kDouble)).abs().max().item<double>() <=
                    8.0 * double(n) * u);
        }
    }

    void blockDiagonalAndRandomSigns() {
        const OrthogonalRotation blocks(96, 32, false, 0);
        const at::Tensor q = blocks.matrix();
        const at::Tensor h32 = hadamardMatrix(32).to(at::kDouble) / std::sqrt(32.0);
        const double u = std::numeric_limits<double>::epsilon() / 2;
        for (int64_t b = 0; b < 3; ++b)
            for (int64_t c = 0; c < 3; ++c) {
                const at::Tensor blk = q.narrow(0, 32 * b, 32).narrow(1, 32 * c, 32);
                const at::Tensor want = b == c ? h32 : at::zeros_like(h32);
                QVERIFY((blk - want).abs().max().item<double>() <= 32 * u);
            }
        QCOMPARE(blocks.description(), std::string("block-diagonal 3x hadamard 32"));

        const OrthogonalRotation signs(64, 0, true, 1);
        const at::Tensor s = signs.matrix();
        const at::Tensor h = hadamardMatrix(64).to(at::kDouble) / 8.0;
        // Q = D H / sqrt(n): each row of Q is +- the row of H (exact: scaling by 1/8 and signs).
        const at::Tensor ratio = s / h;
        QVERIFY(((ratio == 1) | (ratio == -1)).all().item<bool>());
        QVERIFY((ratio.amin(1) == ratio.amax(1)).all().item<bool>());
        QVERIFY((ratio == -1).any().item<bool>());
        QVERIFY(at::equal(s, OrthogonalRotation(64, 0, true, 1).matrix()));
    }

    // x Q^T (the analysis un-rotates captured inputs with it) against the dense matrix's
    // transpose, for every kind of rotation: Hadamard with a Paley base, random orthogonal,
    // block-diagonal and random signs (where Q is not symmetric). Same bound as above.
    void transposeEqualsDenseTranspose() {
        at::manual_seed(4);
        const double u = std::numeric_limits<double>::epsilon() / 2;
        const OrthogonalRotation rotations[] = {{96, 0, false, 0},
                                                {92, 0, false, 0},
                                                {96, 32, false, 0},
                                                {64, 0, true, 1},
                                                {12 * 8, 0, true, 2}};
        for (const OrthogonalRotation& r : rotations) {
            const int64_t n = r.size();
            const at::Tensor x = at::randn({4, n}, at::kDouble);
            const double tol = 2.0 * double(n) * u * x.abs().max().item<double>();
            const double err =
                (r.applyTranspose(x) - at::matmul(x, r.matrix().t())).abs().max().item<double>();
            QVERIFY2(err <= tol, qPrintable(QString::fromStdString(r.description()) +
                                            QString(": %1 > %2").arg(err).arg(tol)));
        }
    }
};

QS_TEST_APPLESS_MAIN(TestHadamard)
#include "tst_hadamard.moc"
