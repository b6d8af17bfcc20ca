// ErrorAccumulator's metrics against their formulas (support/ErrorMetricsFormula.h), element by
// element in double on the host.
// Both sides sum float inputs converted exactly to double, in different orders (the
// accumulator in four lanes per chunk of 2^15, chunks in order; the formula one element after
// another). Over n terms each order's rounding is at most n·2^-53 of the sum of the terms'
// magnitudes; the sums here are of positive terms (d², r², a², |d|/(|r|+eps)) or, for Σar, of
// terms whose magnitudes sum to at most 2·Σa²-ish: n = 100003 gives 100003 · 1.1e-16 ≈ 1.1e-11
// relative; 1e-10 is allowed. maxAbs is one element's |d|: equal exactly.
#include "ErrorMetricsFormula.h"
#include "TestMain.h"

#include "analysis/ErrorAccumulator.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <cmath>
#include <limits>

using namespace qs;

namespace {

using Formula = qs::test::ErrorFormula;

Formula formula(const at::Tensor& a, const at::Tensor& r) {
    return qs::test::errorMetricsFormula(a, r, ErrorAccumulator::kRelativeEps);
}

bool near(double got, double want, double rel = 1e-10) {
    return std::fabs(got - want) <= rel * std::fabs(want);
}

} // namespace

class TestErrorAccumulator : public QObject {
    Q_OBJECT

private:
    // 100003 elements: three full chunks and a ragged one whose length is not a multiple of 4.
    static std::pair<at::Tensor, at::Tensor> data() {
        at::manual_seed(3);
        const at::Tensor r = at::randn({100003}) * 2 + 0.5;
        const at::Tensor a = r + at::randn({100003}) * 0.01;
        return {a, r};
    }

    static ErrorMetrics metrics(const at::Tensor& a, const at::Tensor& r, int64_t batches) {
        ErrorAccumulator acc;
        const int64_t n = a.numel(), step = (n + batches - 1) / batches;
        for (int64_t b = 0; b < n; b += step)
            acc.add(a.narrow(0, b, std::min(step, n - b)), r.narrow(0, b, std::min(step, n - b)));
        return acc.metrics();
    }

private Q_SLOTS:
    void metricsEqualTheFormulas() {
        const auto [a, r] = data();
        const Formula f = formula(a, r);
        for (const int64_t batches : {1, 3}) {
            const ErrorMetrics m = metrics(a, r, batches);
            QVERIFY(m.valid);
            QVERIFY2(near(m.mse, f.mse), qPrintable(QString::number(m.mse / f.mse - 1)));
            QVERIFY(near(m.sqnrDb, f.sqnrDb));
            QVERIFY(near(m.cosine, f.cosine));
            QVERIFY(near(m.meanRelative, f.meanRelative));
            QVERIFY(m.maxAbs == f.maxAbs);
        }
    }

    // Chunks are fixed and combined in order: the sums do not depend on the thread count.
    void metricsDoNotDependOnTheThreadCount() {
        const auto [a, r] = data();
        auto with = [&](int threads) {
            const int before = at::get_num_threads();
            at::set_num_threads(threads);
            const ErrorMetrics m = metrics(a, r, 1);
            at::set_num_threads(before);
            return m;
        };
        const ErrorMetrics one = with(1), two = with(2);
        QVERIFY(one.mse == two.mse && one.cosine == two.cosine &&
                one.meanRelative == two.meanRelative && one.maxAbs == two.maxAbs);
    }

    // A distributed analysis: one accumulator per calibration shard, moved as doubles and merged
    // in shard order, gives the bits of one accumulator fed every batch (0 + x is x).
    void shardsMergedInOrderGiveOneAccumulatorsBits() {
        at::manual_seed(5);
        const at::Tensor r = at::randn({5, 3000});
        const at::Tensor a = r + 0.01 * at::randn({5, 3000});
        ErrorAccumulator one, merged;
        for (int64_t b = 0; b < 5; ++b) {
            one.add(a[b], r[b]);
            ErrorAccumulator shard;
            shard.add(a[b], r[b]);
            std::vector<double> state;
            shard.appendState(state);
            QCOMPARE(state.size(), ErrorAccumulator::kStateSize);
            const double* p = state.data();
            merged.merge(ErrorAccumulator::fromState(p));
        }
        const ErrorMetrics x = one.metrics(), y = merged.metrics();
        QVERIFY(x.mse == y.mse && x.sqnrDb == y.sqnrDb && x.cosine == y.cosine &&
                x.maxAbs == y.maxAbs && x.meanRelative == y.meanRelative);
    }

    // A NaN anywhere (a vector lane or the tail) makes maxAbs NaN: a broken layer shows.
    void nanShowsInMaxAbs() {
        for (const int64_t at : {int64_t(5), int64_t(100001)}) {
            auto [a, r] = data();
            a[at] = std::numeric_limits<float>::quiet_NaN();
            QVERIFY2(std::isnan(metrics(a, r, 1).maxAbs), qPrintable(QString::number(at)));
        }
    }
};

QS_TEST_APPLESS_MAIN(TestErrorAccumulator)
#include "tst_erroraccumulator.moc"
