// Rotary frequencies of every rope type against transformers' formulas (modeling_rope_utils,
// 5.x) evaluated here element by element in double precision. The llama3 type is also covered
// end to end by the tiny-families llama checkpoint (tst_tinyfamilies); these check the types
// no shared checkpoint exercises. Tolerance: the library computes in float32, so each
// frequency agrees to a few float32 ulps (1e-6 relative).
#include "TestMain.h"
#include "model/Rope.h"

#include <QtTest>

#include <cmath>

namespace {

double defaultInv(double base, int64_t dim, int64_t i) {
    return 1.0 / std::pow(base, double(2 * i) / double(dim));
}

void compare(const at::Tensor& got, const std::vector<double>& want) {
    QCOMPARE(got.numel(), int64_t(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
        const double g = got[int64_t(i)].item<double>();
        QVERIFY2(std::fabs(g - want[i]) <= 1e-6 * std::fabs(want[i]),
                 qPrintable(QString("frequency %1: %2 vs %3").arg(i).arg(g).arg(want[i])));
    }
}

} // namespace

class TestRope : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void linearDividesEveryFrequency() {
        qs::RopeParameters r;
        r.type = "linear";
        r.theta = 10000;
        r.factor = 4;
        const auto f = qs::rotaryFrequencies(r, 64, 2048, 100, "c");
        std::vector<double> want;
        for (int64_t i = 0; i < 32; ++i)
            want.push_back(defaultInv(1e4, 64, i) / 4);
        compare(f.inverse, want);
        QCOMPARE(f.attentionScaling, 1.0);
    }

    // NTK-aware dynamic scaling: default frequencies up to max_position_embeddings, a larger
    // base beyond (what a fresh transformers model uses for a forward of that length).
    void dynamicGrowsTheBaseBeyondMaxPositions() {
        qs::RopeParameters r;
        r.type = "dynamic";
        r.theta = 10000;
        r.factor = 2;
        std::vector<double> within, beyond;
        const double base = 1e4 * std::pow(2.0 * 300 / 256 - 1, 64.0 / 62.0);
        for (int64_t i = 0; i < 32; ++i) {
            within.push_back(defaultInv(1e4, 64, i));
            beyond.push_back(defaultInv(base, 64, i));
        }
        compare(qs::rotaryFrequencies(r, 64, 256, 256, "c").inverse, within);
        compare(qs::rotaryFrequencies(r, 64, 256, 300, "c").inverse, beyond);
    }

    void yarnBlendsByWavelength() {
        qs::RopeParameters r;
        r.type = "yarn";
        r.theta = 1e6;
        r.factor = 4;
        r.originalMaxPositions = 4096;
        const int64_t dim = 128;
        const auto f = qs::rotaryFrequencies(r, dim, 16384, 10, "c");
        auto corr = [&](double rot) {
            return dim * std::log(4096 / (rot * 2 * M_PI)) / (2 * std::log(1e6));
        };
        const double low = std::max(std::floor(corr(32)), 0.0);
        const double high = std::min(std::ceil(corr(1)), double(dim - 1));
        std::vector<double> want;
        for (int64_t i = 0; i < dim / 2; ++i) {
            const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
            const double extra = defaultInv(1e6, dim, i);
            // ramp 0: the high frequencies keep their value; ramp 1: divided by the factor
            want.push_back(extra / 4 * ramp + extra * (1 - ramp));
        }
        compare(f.inverse, want);
        QCOMPARE(f.attentionScaling, 0.1 * std::log(4.0) + 1.0);
        r.mscale = 0.707, r.mscaleAllDim = 0.707; // DeepSeek style: the two cancel
        QCOMPARE(qs::rotaryFrequencies(r, dim, 16384, 10, "c").attentionScaling, 1.0);
    }

    // LongRoPE: per-frequency divisors, short ones up to the original length.
    void longropeSwitchesFactorsWithLength() {
        qs::RopeParameters r;
        r.type = "longrope";
        r.theta = 10000;
        r.originalMaxPositions = 64;
        r.factor = 4;
        for (int64_t i = 0; i < 4; ++i) {
            r.shortFactor.push_back(1.0 + 0.5 * double(i));
            r.longFactor.push_back(2.0 + double(i));
        }
        std::vector<double> shortWant, longWant;
        for (int64_t i = 0; i < 4; ++i) {
            shortWant.push_back(defaultInv(1e4, 8, i) / r.shortFactor[size_t(i)]);
            longWant.push_back(defaultInv(1e4, 8, i) / r.longFactor[size_t(i)]);
        }
        const auto s = qs::rotaryFrequencies(r, 8, 256, 64, "c");
        compare(s.inverse, shortWant);
        compare(qs::rotaryFrequencies(r, 8, 256, 65, "c").inverse, longWant);
        QCOMPARE(s.attentionScaling, std::sqrt(1 + std::log(4.0) / std::log(64.0)));
    }

    void partialRotaryFactorRotatesAFraction() {
        qs::RopeParameters r;
        r.partialRotaryFactor = 0.25;
        QCOMPARE(qs::rotaryFrequencies(r, 64, 256, 8, "c").inverse.numel(), int64_t(8));
    }
};

QS_TEST_APPLESS_MAIN(TestRope)
#include "tst_rope.moc"
