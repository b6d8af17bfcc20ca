// Per-channel input statistics (ChannelStatsAccumulator) against their formulas, element by
// element in double on the host:
//   min / max / absmax over every token; excess kurtosis m4 / m2² - 3 with the central moments
//   m2 = E[(x-μ)²], m4 = E[(x-μ)⁴] over every token (0 where the variance is 0).
// The accumulator sums raw moments in double (x, x², x³, x⁴) batch by batch; the formula here
// takes central moments directly. Both see float inputs exactly; the difference is the
// cancellation of the raw-moment form, which for |μ|/σ ≤ 4 (the data below) costs at most
// (1 + (|μ|/σ)⁴) · few · n · 2^-53 ≈ 300 · 4096 · 1.1e-16 ≈ 1.4e-10 relative: 1e-9 is allowed.
#include "TestMain.h"

#include "analysis/ChannelStatsAccumulator.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

using namespace qs;

namespace {

struct Expected {
    std::vector<double> min, max, kurtosis;
};

Expected formulas(const at::Tensor& rows) {
    const at::Tensor d = rows.to(at::kDouble).contiguous();
    const int64_t n = d.size(0), C = d.size(1);
    const double* p = d.data_ptr<double>();
    Expected e;
    for (int64_t c = 0; c < C; ++c) {
        double mn = p[c], mx = p[c], mean = 0;
        for (int64_t i = 0; i < n; ++i) {
            mn = std::min(mn, p[i * C + c]);
            mx = std::max(mx, p[i * C + c]);
            mean += p[i * C + c];
        }
        mean /= double(n);
        double m2 = 0, m4 = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double x = p[i * C + c] - mean;
            m2 += x * x;
            m4 += x * x * x * x;
        }
        m2 /= double(n);
        m4 /= double(n);
        e.min.push_back(mn);
        e.max.push_back(mx);
        e.kurtosis.push_back(m2 > 1e-30 ? m4 / (m2 * m2) - 3.0 : 0.0);
    }
    return e;
}

double relative(double a, double b) {
    return std::fabs(a - b) / std::max(1e-12, std::fabs(b));
}

} // namespace

class TestChannelStatsAccumulator : public QObject {
    Q_OBJECT

private:
    // Batches of [2, 256, C] with per-channel offsets and scales, a few outlier channels and
    // one constant channel; C = 200 is not a multiple of the 64-channel blocks of the CPU path.
    static at::Tensor data(int64_t C) {
        at::manual_seed(7);
        at::Tensor x = at::randn({8, 256, C});
        const at::Tensor scale = at::rand({C}) * 3 + 0.1;
        const at::Tensor offset = (at::rand({C}) - 0.5) * 2 * scale * 4; // |μ|/σ ≤ 4
        x = x * scale + offset;
        x.select(-1, 3).mul_(40);  // heavy outlier channel
        x.select(-1, 17).fill_(2); // constant channel: variance 0, kurtosis 0
        return x;
    }

    static void checkAgainstFormulas() {
        const int64_t C = 200;
        const at::Tensor x = data(C);
        ChannelStatsAccumulator acc;
        for (int64_t b = 0; b < x.size(0); b += 2)
            acc.add(x.narrow(0, b, 2));
        const ChannelStatistics s = acc.finish();
        const Expected e = formulas(x.reshape({-1, C}));
        QCOMPARE(s.tokens, x.size(0) * x.size(1));
        QCOMPARE(int64_t(s.kurtosis.size()), C);
        for (int64_t c = 0; c < C; ++c) {
            // min and max are values of the input: equal exactly.
            // (QCOMPARE on floating point is fuzzy: == says "exactly".)
            QVERIFY(double(s.min[size_t(c)]) == e.min[size_t(c)]);
            QVERIFY(double(s.max[size_t(c)]) == e.max[size_t(c)]);
            QVERIFY(double(s.absmax[size_t(c)]) ==
                    std::max(std::fabs(e.min[size_t(c)]), std::fabs(e.max[size_t(c)])));
            // Kurtosis is stored as float: 2^-24 ≈ 6e-8 relative on top of the 1e-9 above, and
            // absolute where it is near 0.
            const double k = s.kurtosis[size_t(c)], want = e.kurtosis[size_t(c)];
            QVERIFY2(std::fabs(k - want) <= 1e-7 * std::max(1.0, std::fabs(want)),
                     qPrintable(QString("channel %1: kurtosis %2, formula %3")
                                    .arg(c)
                                    .arg(k, 0, 'g', 12)
                                    .arg(want, 0, 'g', 12)));
        }
        QCOMPARE(double(s.kurtosis[17]), 0.0);
        QVERIFY(relative(s.kurtosis[3], e.kurtosis[3]) <= 1e-7);
    }

private Q_SLOTS:
    void statisticsEqualTheFormulas() { checkAgainstFormulas(); }

    // The CPU path splits channels over threads; the sums must not depend on how many.
    void statisticsDoNotDependOnTheThreadCount() {
        const at::Tensor x = data(200);
        auto run = [&](int threads) {
            const int before = at::get_num_threads();
            at::set_num_threads(threads);
            ChannelStatsAccumulator acc;
            for (int64_t b = 0; b < x.size(0); b += 2)
                acc.add(x.narrow(0, b, 2));
            at::set_num_threads(before);
            return acc.finish().kurtosis;
        };
        QCOMPARE(run(1), run(2));
    }

    // A distributed analysis keeps one accumulator per calibration shard (each sampling only
    // what the first kSampleTokens tokens still need), moves it as doubles and merges them in
    // shard order: the statistics of one accumulator fed every batch, exactly. 5 batches of
    // 2000 tokens: the sample ends 192 tokens into the fifth.
    void shardsMergedInOrderGiveOneAccumulatorsBits() {
        at::manual_seed(11);
        const at::Tensor x = at::randn({10, 1000, 24}) * 3 + 1;
        const at::Tensor xq = at::round(x * 4) / 4;
        ChannelStatsAccumulator one;
        ChannelStatsAccumulator merged;
        for (int64_t b = 0; b < 10; b += 2) {
            one.add(x.narrow(0, b, 2));
            one.addQuantized(xq.narrow(0, b, 2));
            ChannelStatsAccumulator shard;
            shard.skipSamples(b * 1000);
            shard.add(x.narrow(0, b, 2));
            shard.addQuantized(xq.narrow(0, b, 2));
            std::vector<double> state;
            shard.appendState(state);
            const double* p = state.data();
            merged.merge(ChannelStatsAccumulator::fromState(p, at::kCPU));
            QCOMPARE(p, state.data() + state.size());
        }
        const ChannelStatistics a = one.finish(), b = merged.finish();
        QCOMPARE(b.tokens, a.tokens);
        QCOMPARE(b.min, a.min);
        QCOMPARE(b.max, a.max);
        QCOMPARE(b.kurtosis, a.kurtosis);
        QCOMPARE(b.percentile, a.percentile);
        QCOMPARE(b.tokenAbsmax, a.tokenAbsmax);
        QCOMPARE(b.histogram.counts, a.histogram.counts);
        QCOMPARE(b.histogram.lo, a.histogram.lo);
        QCOMPARE(b.histogram.hi, a.histogram.hi);
        QCOMPARE(merged.quantizedHistogram(a.histogram).counts,
                 one.quantizedHistogram(a.histogram).counts);
        // The sample is the first 8192 tokens: a shard merged out of order changes it.
        int64_t counted = 0;
        for (const int64_t c : b.histogram.counts)
            counted += c;
        QCOMPARE(counted, ChannelStatsAccumulator::kSampleTokens * 24);
    }

    // The |x| percentile per channel (nearest rank k = ceil(p/100 * rows) on the token sample)
    // is an element of the input: equal to kthvalue's, exactly. Here the whole input is the
    // sample (2048 tokens < kSampleTokens); channel 17 is all ties.
    void percentileIsTheKthSmallestAbsoluteValue() {
        const int64_t C = 200;
        const at::Tensor x = data(C);
        ChannelStatsAccumulator acc;
        for (int64_t b = 0; b < x.size(0); b += 2)
            acc.add(x.narrow(0, b, 2));
        for (const double level : {99.0, 50.0, 100.0}) {
            const ChannelStatistics s = acc.finish(level);
            const at::Tensor rows = x.reshape({-1, C});
            const int64_t k = int64_t(std::ceil(level / 100.0 * double(rows.size(0))));
            const at::Tensor want = std::get<0>(at::kthvalue(rows.abs(), k, 0));
            for (int64_t c = 0; c < C; ++c)
                QVERIFY2(s.percentile[size_t(c)] == want[c].item<float>(),
                         qPrintable(QString("channel %1 at %2 %%").arg(c).arg(level)));
        }
    }

    // The histogram of the sample: equal-width bins over its finite range, bin =
    // floor((v - lo) / (hi - lo) * bins), the top edge in the last bin; integer counts, equal.
    // Infinities and NaN are left out of both the range and the counts.
    void histogramCountsEqualTheFormula() {
        const at::Tensor x = data(200).clone();
        const float inf = std::numeric_limits<float>::infinity();
        x.view({-1})[10] = inf;
        x.view({-1})[13] = -inf;
        x.view({-1})[70001] = std::numeric_limits<float>::quiet_NaN();
        ChannelStatsAccumulator acc;
        acc.add(x);
        const Histogram h = acc.finish().histogram;
        const at::Tensor flat = x.reshape({-1}).contiguous();
        const float* p = flat.data_ptr<float>();
        double lo = p[0], hi = p[0];
        for (int64_t i = 0; i < flat.numel(); ++i) {
            if (!std::isfinite(p[i]))
                continue;
            lo = std::min(lo, double(p[i]));
            hi = std::max(hi, double(p[i]));
        }
        QVERIFY(h.lo == lo && h.hi == hi);
        const int64_t bins = ChannelStatsAccumulator::kHistogramBins;
        std::vector<int64_t> counts(size_t(bins), 0);
        for (int64_t i = 0; i < flat.numel(); ++i)
            if (std::isfinite(p[i]))
                ++counts[size_t(std::min<int64_t>(
                    bins - 1, int64_t((double(p[i]) - lo) * (double(bins) / (hi - lo)))))];
        QCOMPARE(h.counts, counts);
    }

    // A NaN in a channel shows in its min and max (as ATen's amin/amax propagate it), not
    // silently dropped.
    void nanPropagatesToTheRange() {
        at::Tensor x = at::randn({1, 64, 70});
        x[0][5][66] = std::numeric_limits<float>::quiet_NaN();
        ChannelStatsAccumulator acc;
        acc.add(x);
        acc.add(at::randn({1, 64, 70})); // a later batch keeps it
        const ChannelStatistics s = acc.finish(100.0);
        QVERIFY(std::isnan(s.min[66]));
        QVERIFY(std::isnan(s.max[66]));
        QVERIFY(!std::isnan(s.min[65]) && !std::isnan(s.max[65]));
        // In the percentile NaN ranks above every number (kthvalue's order): the top rank of
        // |x| (100 %) is NaN.
        QVERIFY(std::isnan(s.percentile[66]));
        QVERIFY(!std::isnan(s.percentile[65]));
    }
};

QS_TEST_APPLESS_MAIN(TestChannelStatsAccumulator)
#include "tst_channelstatsaccumulator.moc"
