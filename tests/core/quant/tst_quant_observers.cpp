// Observers: running min/max (static vs dynamic), Quark's percentile and MSE histogram searches
// recomputed here from sorted data / a separately built histogram, per-token dynamic activation
// quantization, and NVFP4's static tensor scale under dynamic groups.
#include "QuantTestHelpers.h"
#include "TestMain.h"

#include "quant/MinMaxObserver.h"
#include "quant/MseObserver.h"
#include "quant/PercentileObserver.h"
#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>
#include <cfloat>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

QuantSpec int8Tensor(ObserverKind o = ObserverKind::MinMax, bool sym = true) {
    QuantSpec s = QuantSpec::defaults(DataType::Int8);
    s.observer = o;
    s.symmetric = sym;
    return s;
}

at::Tensor gaussian(int64_t n, uint32_t seed) {
    return randomWeights({n}, seed, 12.0f);
}

} // namespace

class TestQuantObservers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void minMaxStaticAccumulatesDynamicReplaces() {
        const at::Tensor a = tensorOf({-1.0f, 0.5f, 2.0f}, {3});
        const at::Tensor b = tensorOf({-3.0f, 0.25f, 1.0f}, {3});
        QuantSpec s = int8Tensor(ObserverKind::MinMax, false);
        MinMaxObserver stat(s);
        stat.observe(a);
        stat.observe(b);
        QCOMPARE(stat.range().min.item<float>(), -3.0f);
        QCOMPARE(stat.range().max.item<float>(), 2.0f);
        const QuantParams p = stat.params();
        QCOMPARE(p.scale.item<float>(), 5.0f / 255.0f); // (2 - (-3)) / 255
        QCOMPARE(p.zeroPoint.item<int>(), -128 - int(std::nearbyint(-3.0f / (5.0f / 255.0f))));

        s.isDynamic = true;
        MinMaxObserver dyn(s);
        dyn.observe(a);
        dyn.observe(b);
        QCOMPARE(dyn.range().max.item<float>(), 1.0f);

        // Per channel accumulates elementwise; mismatched shapes are an error.
        QuantSpec ch = int8Tensor();
        ch.granularity = Granularity::PerChannel;
        MinMaxObserver c(ch);
        c.observe(tensorOf({1, -2, 3, 4}, {2, 2}));
        c.observe(tensorOf({-5, 0, 0, 6}, {2, 2}));
        QCOMPARE(values(c.range().min), (std::vector<float>{-5, 0}));
        QCOMPARE(values(c.range().max), (std::vector<float>{1, 6}));
        QVERIFY_THROWS_EXCEPTION(qs::Error, c.observe(at::zeros({3, 2})));

        MinMaxObserver empty(int8Tensor());
        QVERIFY_THROWS_EXCEPTION(qs::Error, empty.params());
        empty.observe(at::zeros({0}));
        QVERIFY(!empty.hasObserved());
    }

    void percentileMatchesSortedDataReference() {
        const at::Tensor x = gaussian(20000, 3);
        for (double pct : {99.99999999, 99.9, 99.0}) {
            ObserverOptions opt;
            opt.percentile = pct;
            PercentileObserver obs(int8Tensor(ObserverKind::Percentile), opt);
            obs.observe(x);
            // Reference: sort |x| (zeros skipped), take the value at the percentile's rank, and
            // report the left edge of its bin in a 4200-bin histogram over [0, max|x|].
            auto v = values(x.abs());
            v.erase(std::remove(v.begin(), v.end(), 0.0f), v.end());
            std::sort(v.begin(), v.end());
            const double width = double(v.back()) / 4200;
            const auto rank = static_cast<size_t>(std::ceil(pct / 100.0 * double(v.size())));
            const double value = v[std::min(rank, v.size()) - 1];
            const auto bin = std::min<int64_t>(int64_t(std::floor(value / width)), 4199);
            const double edge = double(bin) * width;
            QCOMPARE(obs.clipRange().second, edge);
            const float scale = std::max(float(edge) / 127.5f, FLT_EPSILON);
            QCOMPARE(obs.params().scale.item<float>(), scale);
        }
        // Only zeros: a zero range (Quark's zero-mass path), scale = eps.
        PercentileObserver zeros(int8Tensor(ObserverKind::Percentile));
        zeros.observe(at::zeros({16}));
        QCOMPARE(zeros.params().scale.item<float>(), FLT_EPSILON);
    }

    void percentileAsymmetricClipsBothTails() {
        at::Tensor x = gaussian(10000, 4) + 1.0f;
        PercentileObserver obs(int8Tensor(ObserverKind::Percentile, false),
                               {4200, 99.0, true, 2048, 2045, 1});
        obs.observe(x);
        const auto [lo, hi] = obs.clipRange();
        const auto v = values(x);
        const float mn = *std::min_element(v.begin(), v.end());
        const float mx = *std::max_element(v.begin(), v.end());
        QVERIFY(lo > mn && lo < 1.0);
        QVERIFY(hi < mx && hi > 1.0);
    }

    void mseMatchesHistogramSearch() {
        const at::Tensor x = gaussian(30000, 5);
        for (int start : {2045, 1024}) {
            ObserverOptions opt;
            opt.mseStartBin = start;
            MseObserver obs(int8Tensor(ObserverKind::Mse), opt);
            obs.observe(x);
            // Reference: a 2048-bin histogram of |x| over [0, max], bin centres as candidate
            // clipping maxima, error = sum(count * (fq(c) - c)^2) with torch.fake_quantize
            // semantics, first minimum wins.
            const auto v = values(x.abs());
            const double mx = *std::max_element(v.begin(), v.end());
            const double w = mx / 2048;
            std::vector<double> counts(2048, 0.0);
            for (float a : v)
                counts[std::min<size_t>(size_t(std::floor(a / w)), 2047)] += 1;
            double best = 1e300, bestAmax = 0;
            for (int i = start; i < 2048; ++i) {
                const double amax = i * w + w / 2;
                const float s = std::max(float(amax) / 127.5f, FLT_EPSILON);
                double err = 0;
                for (int k = 0; k < 2048; ++k) {
                    const auto c = float(k * w + w / 2);
                    const float q = std::clamp(std::nearbyint(c * (1.0f / s)), -128.0f, 127.0f) * s;
                    const double d = double(q) - c;
                    err += d * d * counts[k];
                }
                if (err < best) {
                    best = err;
                    bestAmax = amax;
                }
            }
            QCOMPARE(obs.clipRange().second, bestAmax);
            if (start == 2045)
                QVERIFY(bestAmax >= 2045 * w); // Quark's grid only looks at the top three bins
        }
        // FP8 works too and picks an amax at or below the maximum.
        QuantSpec f = QuantSpec::defaults(DataType::Fp8E4M3);
        f.observer = ObserverKind::Mse;
        MseObserver fobs(f, {4200, 99.99, true, 2048, 1500, 1});
        fobs.observe(x);
        QVERIFY(fobs.clipRange().second <= values(x.abs().max())[0]);
        QVERIFY(fobs.params().scale.item<float>() > 0);
    }

    void histogramWidensAcrossCalls() {
        PercentileObserver obs(int8Tensor(ObserverKind::Percentile),
                               {100, 100.0, true, 2048, 2045, 1});
        obs.observe(tensorOf({1.0f, 2.0f}, {2}));
        QCOMPARE(obs.counts().size(), size_t(100));
        obs.observe(tensorOf({5.0f}, {1}));
        QVERIFY(obs.counts().size() >= 250); // widened by whole bins of the first width (0.02)
        double total = 0;
        for (double c : obs.counts())
            total += c;
        QCOMPARE(total, 3.0);
        QVERIFY(obs.clipRange().second > 4.9);
    }

    void perTokenDynamicActivations() {
        const at::Tensor x = randomWeights({2, 3, 16}, 6);
        QuantSpec s = QuantSpec::defaults(DataType::Int8);
        s.granularity = Granularity::PerToken;
        s.isDynamic = true;
        QCOMPARE(paramShape(x, s), (std::vector<int64_t>{2, 3}));
        const auto out = values(fakeQuantize(x, s));
        const auto xv = values(x);
        for (int t = 0; t < 6; ++t) {
            float amax = 0;
            for (int i = 0; i < 16; ++i)
                amax = std::max(amax, std::fabs(xv[t * 16 + i]));
            const float sc = std::max(amax / 127.5f, FLT_EPSILON);
            for (int i = 0; i < 16; ++i) {
                const float q =
                    std::clamp(std::nearbyint(xv[t * 16 + i] * (1.0f / sc)), -128.0f, 127.0f);
                QCOMPARE(out[t * 16 + i], q * sc);
            }
        }
        // FP8 per token (ptpc_fp8 activations).
        QuantSpec f = QuantSpec::defaults(DataType::Fp8E4M3);
        f.granularity = Granularity::PerToken;
        f.isDynamic = true;
        const at::Tensor y = fakeQuantize(x, f);
        QCOMPARE(y.sizes(), x.sizes());
        QVERIFY((y - x).abs().max().item<float>() <= x.abs().max().item<float>() / 8);
    }

    void nvfp4StaticTensorScaleDynamicGroups() {
        QuantSpec s = QuantSpec::defaults(DataType::NvFp4);
        s.isDynamic = true;
        MinMaxObserver obs(s);
        obs.observe(at::full({1, 16}, 10.0f));
        obs.observe(at::full({1, 16}, 2.0f));
        const QuantParams p = obs.params();
        QCOMPARE(p.globalScale.item<float>(), 10.0f / 2688.0f); // the running tensor max
        QCOMPARE(obs.range().max.item<float>(), 2.0f);          // the latest groups
    }

    void mxStaticAccumulatesBlockMaxima() {
        const QuantSpec s = QuantSpec::defaults(DataType::MxFp4);
        MinMaxObserver obs(s);
        at::Tensor a = at::zeros({1, 64});
        a[0][0] = 3.0f;
        at::Tensor b = at::zeros({1, 64});
        b[0][40] = 12.0f;
        obs.observe(a);
        obs.observe(b);
        QCOMPARE(values(obs.range().max), (std::vector<float>{3.0f, 12.0f}));
        // 3 -> 2^(1-2), 12 = 1.5 * 8 -> 2^(3-2).
        QCOMPARE(values(obs.params().scale), (std::vector<float>{0.5f, 2.0f}));
    }
};

QS_TEST_APPLESS_MAIN(TestQuantObservers)
#include "tst_quant_observers.moc"
