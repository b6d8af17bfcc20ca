// The GUI's spin boxes take their ranges from the recipe's limits (recipe/RecipeLimits.h) and
// never offer a value the recipe's validation would refuse.
#include "LimitedSpinBox.h"
#include "TestMain.h"

#include "recipe/Recipe.h"
#include "recipe/RecipeLimits.h"
#include "util/Error.h"

#include <QSpinBox>
#include <QtTest>

#include <limits>

class TestLimitedSpinBox : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rangeIsTheRecipes() {
        QSpinBox box;
        qs::applyFieldLimit(&box, qs::limits::calibrationSeqLen);
        QCOMPARE(int64_t(box.minimum()), qs::limits::calibrationSeqLen.min);
        QCOMPARE(int64_t(box.maximum()), qs::limits::calibrationSeqLen.max);
        // A limit beyond what an int holds is clamped, not wrapped.
        QSpinBox windows;
        qs::applyFieldLimit(&windows, qs::limits::evaluationMaxWindows, QStringLiteral("all"));
        QCOMPARE(windows.minimum(), 0);
        QCOMPARE(windows.maximum(), std::numeric_limits<int>::max());
        QCOMPARE(windows.specialValueText(), QStringLiteral("all"));
    }

    void theGapBelowTheMinimumIsSteppedOver() {
        // evaluation.seq_len: 0 (the model's context) or at least 2; 1 is refused.
        QSpinBox box;
        qs::applyFieldLimit(&box, qs::limits::evaluationSeqLen, QStringLiteral("model context"));
        QCOMPARE(box.value(), 0);
        box.stepUp();
        QCOMPARE(int64_t(box.value()), qs::limits::evaluationSeqLen.min);
        box.stepDown();
        QCOMPARE(box.value(), 0);
        box.setValue(1); // typed
        QVERIFY(qs::limits::evaluationSeqLen.allows(box.value()));
    }

    void everyValueTheBoxHoldsPassesValidation() {
        // The box's extremes, written into a recipe, validate: the GUI and the recipe agree.
        QSpinBox seq, samples;
        qs::applyFieldLimit(&seq, qs::limits::calibrationSeqLen);
        qs::applyFieldLimit(&samples, qs::limits::calibrationSamples);
        for (int s : {seq.minimum(), seq.maximum()})
            for (int n : {samples.minimum(), samples.maximum()}) {
                qs::Recipe r;
                r.calibration.seqLen = s;
                r.calibration.numSamples = n;
                r.validate("gui");
            }
        qs::Recipe below;
        below.calibration.seqLen = seq.minimum() - 1;
        QVERIFY_THROWS_EXCEPTION(qs::Error, below.validate("gui"));
    }
};

QS_TEST_MAIN(TestLimitedSpinBox)
#include "tst_limitedspinbox.moc"
