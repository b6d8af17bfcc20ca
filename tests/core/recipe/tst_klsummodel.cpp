// The recipe search's map from the sum S of the units' KL alone to a predicted KL,
// KL = S / (1 + lambda S): one anchor is reproduced, several are weighted by their measured KL
// squared, unusable anchors are ignored, and a negative lambda is limited so that the
// prediction stays finite over the frontier.
#include "TestMain.h"
#include "recipe/KlSumModel.h"

#include <QtTest>

#include <cmath>
#include <limits>

namespace {

// predict(S) with lambda = 1/K - 1/S is S / (1 + S/K - 1) = K in exact arithmetic. In doubles
// (eps = 2^-53 per operation): the two reciprocals and their difference put an absolute error of
// at most eps (S/K + 1) + eps |S/K - 1| <= 2 eps max(S/K, 1) on lambda S = S/K - 1, which is
// relative 2 eps max(1, K/S) on 1 + lambda S = S/K; the product, the sum and the quotient add
// one eps each. For the anchors below (K/S < 1.2): under 6 eps = 6.7e-16; 3e-15 leaves room.
constexpr double kReproduced = 3e-15;

bool near(double a, double b, double relative) {
    return std::abs(a - b) <= relative * std::abs(b);
}

} // namespace

class TestKlSumModel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noAnchorsIsTheSum() {
        const qs::KlSumModel m;
        QCOMPARE(m.lambda(), 0.0);
        QCOMPARE(m.predict(0.25), 0.25);
    }

    void oneAnchorIsReproduced() {
        // Saturating (measured below the sum) and growing faster (above it).
        for (const auto& [sum, measured] : {std::pair{0.292, 0.159}, std::pair{0.132, 0.155}}) {
            const qs::KlSumModel m({{"c", sum, measured}}, sum);
            QVERIFY(!m.clamped());
            QVERIFY2(near(m.predict(sum), measured, kReproduced),
                     qPrintable(QString::number(m.predict(sum), 'g', 17)));
            QCOMPARE(m.predict(0.0), 0.0);
            // Increasing in S, so the sum's optimum stays the prediction's.
            QVERIFY(m.predict(0.5 * sum) < m.predict(sum));
        }
    }

    void anchorsWeighByTheirKlSquared() {
        // A near-lossless anchor's own lambda is the difference of two large reciprocals: its
        // weight is (K_small / K_large)^2 of the large one's.
        const double small = 1e-3, large = 0.2;
        const double lSmall = 1.0 / small - 1.0 / 1.2e-3, lLarge = 1.0 / large - 1.0 / 0.3;
        const qs::KlSumModel m({{"fp8", 1.2e-3, small}, {"mxfp4", 0.3, large}}, 0.3);
        const double expected =
            (small * small * lSmall + large * large * lLarge) / (small * small + large * large);
        QVERIFY(near(m.lambda(), expected, 1e-15));
        // ...so it moves lambda off the large anchor's by w (lSmall - lLarge) / (1 + w), w =
        // (small/large)^2 = 2.5e-5: 4.2e-3, 2.5e-3 of lLarge = 1.67, although its own lambda is
        // 100 times larger.
        QVERIFY(near(m.lambda(), lLarge, 3e-3));
        QVERIFY(!near(m.lambda(), lLarge, 2e-3));
    }

    void unusableAnchorsAreIgnored() {
        // A candidate that fits no unit (sum 0) or measures 0 says nothing about the map.
        const qs::KlSumModel m({{"a", 0.0, 0.0}, {"b", 0.1, 0.0}, {"c", 0.2, 0.1}}, 0.2);
        QVERIFY(near(m.lambda(), 1.0 / 0.1 - 1.0 / 0.2, 1e-15));
        QCOMPARE(int(m.anchors().size()), 3);
    }

    void negativeLambdaIsLimited() {
        // Measured four times the sum: lambda = 1/0.4 - 1/0.1 = -7.5 would make 1 + lambda S
        // vanish at S = 0.133; over a frontier reaching S = 0.5 it is limited to -1 (KL = 2S
        // there).
        const qs::KlSumModel m({{"c", 0.1, 0.4}}, 0.5);
        QVERIFY(m.clamped());
        QCOMPARE(m.lambda(), -1.0);
        QCOMPARE(m.predict(0.5), 1.0);
    }
};

QS_TEST_GUILESS_MAIN(TestKlSumModel)
#include "tst_klsummodel.moc"
