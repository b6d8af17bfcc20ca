// EvalPanel, the one evaluation UI (issue 28: there were two, with separate data fields): its
// text and windows are the recipe's (edited through the RecipeDocument, undoable, and following
// it), Evaluate asks when there is a model, a text and no other run; it restores a device and
// precision and reports the user's choice of them; it shows progress, the unquantized and the
// quantized perplexity with their difference and the fidelity, failures and cancellation, and
// keeps the figures in view in a short dock.
#include "EvalPanel.h"
#include "RecipeDocument.h"
#include "TestMain.h"

#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

#include <cmath>

namespace {

qs::PerplexityResult perplexity(double value) {
    qs::PerplexityResult r;
    r.perplexity = value;
    r.windows = 44;
    r.seqLen = 256;
    r.device = "cpu";
    r.dtype = "bfloat16";
    return r;
}

} // namespace

class TestEvalPanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void evaluateNeedsAModelATextAndNoOtherRun() {
        qs::RecipeDocument doc;
        qs::EvalPanel panel;
        panel.setDocument(&doc);
        QVERIFY(!panel.evaluateButton()->isEnabled());
        panel.setModelLoaded(true);
        QVERIFY(!panel.evaluateButton()->isEnabled()); // no text yet
        doc.setEvaluationData(QStringLiteral("/data/wiki.txt"));
        QVERIFY(panel.evaluateButton()->isEnabled());
        QVERIFY(!panel.cancelButton()->isEnabled());
        QSignalSpy evaluate(&panel, &qs::EvalPanel::evaluateRequested);
        QTest::mouseClick(panel.evaluateButton(), Qt::LeftButton);
        QCOMPARE(evaluate.count(), 1);
        panel.setBusy(true); // Analyze, say, is going
        QVERIFY(!panel.evaluateButton()->isEnabled());
        panel.setBusy(false);
        QVERIFY(panel.evaluateButton()->isEnabled());
        panel.setModelLoaded(false);
        QVERIFY(!panel.evaluateButton()->isEnabled());
    }

    // The fields are the recipe's evaluation spec: what the user enters is a recipe edit (one
    // undo step each), and a recipe loaded or undone shows in the fields.
    void theFieldsAreTheRecipes() {
        qs::RecipeDocument doc;
        qs::EvalPanel panel;
        panel.setDocument(&doc);
        QCOMPARE(panel.seqLenBox()->value(), 0);     // the model's context
        QCOMPARE(panel.maxWindowsBox()->value(), 0); // all
        QCOMPARE(panel.seqLenBox()->specialValueText(), QStringLiteral("model context"));

        panel.dataEdit()->setText(QStringLiteral("/data/wiki.txt"));
        Q_EMIT panel.dataEdit()->editingFinished();
        panel.seqLenBox()->setValue(256);
        panel.maxWindowsBox()->setValue(40);
        const qs::EvaluationSpec& spec = doc.recipe().evaluation;
        QCOMPARE(spec.dataPath, std::string("/data/wiki.txt"));
        QCOMPARE(spec.seqLen, int64_t(256));
        QCOMPARE(spec.maxWindows, int64_t(40));
        QCOMPARE(doc.undoStack()->count(), 3);

        doc.undoStack()->undo(); // the windows back to all
        QCOMPARE(panel.maxWindowsBox()->value(), 0);
        qs::Recipe other = doc.recipe();
        other.evaluation.dataPath = "/data/other.txt";
        other.evaluation.seqLen = 128;
        doc.setRecipe(other, QStringLiteral("load"));
        QCOMPARE(panel.dataPath(), QStringLiteral("/data/other.txt"));
        QCOMPARE(panel.seqLenBox()->value(), 128);
        // Following the recipe is no edit of it.
        QCOMPARE(doc.undoStack()->count(), 3);
    }

    void defaultsAreCpuAndFloat32() {
        qs::EvalPanel panel;
        QCOMPARE(panel.device(), QStringLiteral("cpu"));
        QCOMPARE(panel.dtype(), QStringLiteral("float32"));
        QVERIFY(!panel.deviceBox()->isEnabled()); // nothing to choose with cpu alone
        panel.setDevices({QStringLiteral("cpu"), QStringLiteral("cuda")});
        QVERIFY(panel.deviceBox()->isEnabled());
    }

    // A model's saved device and precision are restored when the engine still offers them;
    // otherwise the first device and float32, silently. Only the user's pick is reported.
    void computeIsRestoredAndTheUsersChoiceReported() {
        qs::EvalPanel panel;
        panel.setDevices({QStringLiteral("cpu")});
        QSignalSpy chosen(&panel, &qs::EvalPanel::computeChosen);
        panel.setCompute(QStringLiteral("cpu"), QStringLiteral("bfloat16"));
        QCOMPARE(panel.dtype(), QStringLiteral("bfloat16"));
        panel.setCompute(QStringLiteral("cuda"), QStringLiteral("float16")); // cuda not offered
        QCOMPARE(panel.device(), QStringLiteral("cpu"));
        QCOMPARE(panel.dtype(), QStringLiteral("float16"));
        panel.setCompute(QString(), QStringLiteral("float64")); // nothing saved, unknown dtype
        QCOMPARE(panel.device(), QStringLiteral("cpu"));
        QCOMPARE(panel.dtype(), QStringLiteral("float32"));
        panel.setDevices({QStringLiteral("cpu")}); // refilled by code: not the user's choice
        QCOMPARE(chosen.count(), 0);

        // The user steps the precision box down once: float32 → bfloat16.
        QTest::keyClick(panel.dtypeBox(), Qt::Key_Down);
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen[0][0].toString(), QStringLiteral("cpu"));
        QCOMPARE(chosen[0][1].toString(), QStringLiteral("bfloat16"));
        QCOMPARE(panel.dtype(), QStringLiteral("bfloat16"));
    }

    void runningStateAndProgress() {
        qs::RecipeDocument doc;
        doc.setEvaluationData(QStringLiteral("/data/wiki.txt"));
        qs::EvalPanel panel;
        panel.setDocument(&doc);
        panel.setModelLoaded(true);
        QVERIFY(!panel.progressBar()->isVisibleTo(&panel));
        panel.setRunning(true);
        QVERIFY(panel.progressBar()->isVisibleTo(&panel));
        QVERIFY(!panel.evaluateButton()->isEnabled());
        QVERIFY(panel.cancelButton()->isEnabled());
        QVERIFY(!panel.seqLenBox()->isEnabled());
        QSignalSpy cancel(&panel, &qs::EvalPanel::cancelRequested);
        QTest::mouseClick(panel.cancelButton(), Qt::LeftButton);
        QCOMPARE(cancel.count(), 1);
        panel.setProgress(0.25, QStringLiteral("window 10 of 40"));
        QCOMPARE(panel.progressBar()->value(),
                 panel.progressBar()->minimum() +
                     (panel.progressBar()->maximum() - panel.progressBar()->minimum()) / 4);
        QCOMPARE(panel.statusLabel()->text(), QStringLiteral("window 10 of 40"));
        panel.showCancelled();
        QVERIFY(panel.evaluateButton()->isEnabled());
        QVERIFY(!panel.cancelButton()->isEnabled());
        QCOMPARE(panel.progressBar()->value(), 0);
        QVERIFY(!panel.progressBar()->isVisibleTo(&panel));
    }

    // Issue 28: Evaluate shows fp, quantized and their difference, beside the fidelity.
    void perplexitiesSideBySide() {
        qs::EvalPanel panel;
        const qs::PerplexityResult fp = perplexity(5.74712), q = perplexity(6.0);
        panel.setRunning(true);
        panel.showPerplexities(fp, q);
        QVERIFY(!panel.isRunning());
        QCOMPARE(panel.fpPerplexityLabel()->text(), QStringLiteral("5.7471"));
        QCOMPARE(panel.quantizedPerplexityLabel()->text(), QStringLiteral("6.0000"));
        // (6 / 5.74712 - 1) * 100 = 4.40 %
        QVERIFY2(panel.quantizedPerplexityLabel()->toolTip().contains(QStringLiteral("4.40%")),
                 qPrintable(panel.quantizedPerplexityLabel()->toolTip()));
        QCOMPARE(panel.perplexityDifferenceLabel()->text(), QStringLiteral("+0.2529 (+4.40 %)"));
        QCOMPARE(panel.windowsLabel()->text(), QStringLiteral("44 × 256 tokens"));
        // The results' own device and precision, whatever the boxes say now.
        QCOMPARE(panel.perplexityComputeLabel()->text(), QStringLiteral("cpu · bfloat16"));
        QCOMPARE(panel.klLabel()->text(), QStringLiteral("–")); // no fidelity measured
        qs::FidelityReport fidelity;
        fidelity.klMean = {0.0821119, 0.0014464};
        fidelity.sameTop = {0.83779, 0.00348};
        panel.showPerplexities(fp, q, fidelity);
        QCOMPARE(panel.klLabel()->text(), QStringLiteral("0.082112 ± 0.001446"));
        QCOMPARE(panel.sameTopLabel()->text(), QStringLiteral("83.78 ± 0.35 %"));
        panel.showPerplexities(fp, std::nullopt);
        QCOMPARE(panel.perplexityDifferenceLabel()->text(), QStringLiteral("–"));
        QCOMPARE(panel.perplexityComputeLabel()->text(), QStringLiteral("cpu · bfloat16"));
        // A new evaluation clears the old figures.
        panel.setRunning(true);
        QCOMPARE(panel.fpPerplexityLabel()->text(), QStringLiteral("–"));
        QCOMPARE(panel.klLabel()->text(), QStringLiteral("–"));
        QCOMPARE(panel.perplexityComputeLabel()->text(), QStringLiteral("–"));
    }

    // Issue 28: the figures were below the fold of a short dock (at 1366x768 it had to be
    // undocked to read them): they are scrolled into view when they come.
    void theFiguresAreInViewInAShortDock() {
        qs::EvalPanel panel;
        panel.resize(400, 180);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRunning(true);
        panel.showPerplexities(perplexity(5.7), perplexity(6.0));
        QTRY_VERIFY(!panel.perplexityDifferenceLabel()->visibleRegion().isEmpty());
        QVERIFY(!panel.quantizedPerplexityLabel()->visibleRegion().isEmpty());
    }

    void failureIsShown() {
        qs::EvalPanel panel;
        panel.setModelLoaded(true);
        panel.setRunning(true);
        panel.showFailure(QStringLiteral("/data/wiki.txt: cannot open"));
        QVERIFY(panel.statusLabel()->text().contains(QStringLiteral("cannot open")));
        QVERIFY(!panel.isRunning());
        QVERIFY(!panel.cancelButton()->isEnabled());
    }
};

QS_TEST_MAIN(TestEvalPanel)
#include "tst_evalpanel.moc"
