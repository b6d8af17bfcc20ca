// EvalPanel: what it asks for (runRequested carries the settings as an EvalRequest), when it lets
// the user ask, how it restores a device and precision and reports the user's choice of them,
// and how it shows progress, results (with their device and precision), failures and
// cancellation.
#include "EvalPanel.h"
#include "TestMain.h"

#include <QComboBox>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include <cmath>

class TestEvalPanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void runNeedsAModelAndAText() {
        qs::EvalPanel panel;
        QVERIFY(!panel.runButton()->isEnabled());
        panel.setModelLoaded(true);
        QVERIFY(!panel.runButton()->isEnabled()); // no text yet
        panel.setDataPath(QStringLiteral("/data/wiki.txt"));
        QVERIFY(panel.runButton()->isEnabled());
        QVERIFY(!panel.cancelButton()->isEnabled());
        panel.setModelLoaded(false);
        QVERIFY(!panel.runButton()->isEnabled());
    }

    void runRequestCarriesTheSettings() {
        qs::EvalPanel panel;
        panel.setDevices({QStringLiteral("cpu"), QStringLiteral("cuda")});
        QVERIFY(panel.deviceBox()->isEnabled());
        panel.setModelLoaded(true);
        panel.setDataPath(QStringLiteral("/data/wiki.txt"));
        panel.seqLenBox()->setValue(256);
        panel.maxWindowsBox()->setValue(40);
        panel.deviceBox()->setCurrentText(QStringLiteral("cuda"));
        panel.dtypeBox()->setCurrentText(QStringLiteral("bfloat16"));
        QSignalSpy run(&panel, &qs::EvalPanel::runRequested);
        QTest::mouseClick(panel.runButton(), Qt::LeftButton);
        QCOMPARE(run.count(), 1);
        const auto request = run[0][0].value<qs::EvalRequest>();
        QCOMPARE(request.evaluation.dataPath, std::string("/data/wiki.txt"));
        QCOMPARE(request.evaluation.seqLen, int64_t(256));
        QCOMPARE(request.evaluation.maxWindows, int64_t(40));
        QCOMPARE(request.device, std::string("cuda"));
        QCOMPARE(request.dtype, std::string("bfloat16"));
    }

    void defaultsMeanAutoAndAll() {
        qs::EvalPanel panel;
        const qs::EvalRequest request = panel.request();
        QCOMPARE(request.evaluation.seqLen, int64_t(0)); // EvalRequest: 0 = min(512, max positions)
        QCOMPARE(request.evaluation.maxWindows, int64_t(0)); // 0 = all windows
        QCOMPARE(request.device, std::string("cpu"));
        QCOMPARE(request.dtype, std::string("float32"));
        QVERIFY(!panel.deviceBox()->isEnabled()); // nothing to choose with cpu alone
    }

    // A model's saved device and precision are restored when the engine still offers them;
    // otherwise the first device and float32, silently. Only the user's pick is reported.
    void computeIsRestoredAndTheUsersChoiceReported() {
        qs::EvalPanel panel;
        panel.setDevices({QStringLiteral("cpu")});
        QSignalSpy chosen(&panel, &qs::EvalPanel::computeChosen);
        panel.setCompute(QStringLiteral("cpu"), QStringLiteral("bfloat16"));
        QCOMPARE(panel.request().dtype, std::string("bfloat16"));
        panel.setCompute(QStringLiteral("cuda"), QStringLiteral("float16")); // cuda not offered
        QCOMPARE(panel.request().device, std::string("cpu"));
        QCOMPARE(panel.request().dtype, std::string("float16"));
        panel.setCompute(QString(), QStringLiteral("float64")); // nothing saved, unknown dtype
        QCOMPARE(panel.request().device, std::string("cpu"));
        QCOMPARE(panel.request().dtype, std::string("float32"));
        panel.setDevices({QStringLiteral("cpu")}); // refilled by code: not the user's choice
        QCOMPARE(chosen.count(), 0);

        // The user steps the precision box down once: float32 → bfloat16.
        QTest::keyClick(panel.dtypeBox(), Qt::Key_Down);
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen[0][0].toString(), QStringLiteral("cpu"));
        QCOMPARE(chosen[0][1].toString(), QStringLiteral("bfloat16"));
        QCOMPARE(panel.request().dtype, std::string("bfloat16"));
    }

    void runningStateAndProgress() {
        qs::EvalPanel panel;
        panel.setModelLoaded(true);
        panel.setDataPath(QStringLiteral("/data/wiki.txt"));
        QVERIFY(!panel.progressBar()->isVisibleTo(&panel));
        panel.setRunning(true);
        QVERIFY(panel.progressBar()->isVisibleTo(&panel));
        QVERIFY(!panel.runButton()->isEnabled());
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
        QVERIFY(panel.runButton()->isEnabled());
        QVERIFY(!panel.cancelButton()->isEnabled());
        QCOMPARE(panel.progressBar()->value(), 0);
        QVERIFY(!panel.progressBar()->isVisibleTo(&panel));
    }

    void resultIsShown() {
        qs::EvalPanel panel;
        panel.setModelLoaded(true);
        panel.setDataPath(QStringLiteral("/data/wiki.txt"));
        panel.setRunning(true);
        qs::PerplexityResult r;
        r.tokens = 11283;
        r.windows = 44;
        r.seqLen = 256;
        r.predicted = r.windows * (r.seqLen - 1);
        r.meanNll = 1.748766;
        r.perplexity = std::exp(r.meanNll);
        r.seconds = 0.5;
        r.tokensPerSecond = double(r.windows * r.seqLen) / r.seconds;
        r.device = "cpu";
        r.dtype = "bfloat16";
        panel.showResult(r);
        // The result's own device and precision, whatever the boxes say now.
        QCOMPARE(panel.resultLabel(QStringLiteral("compute"))->text(),
                 QStringLiteral("cpu · bfloat16"));
        QCOMPARE(panel.resultLabel(QStringLiteral("tokens"))->text(), QStringLiteral("11,283"));
        QCOMPARE(panel.resultLabel(QStringLiteral("windows"))->text(),
                 QStringLiteral("44 × 256 tokens"));
        QCOMPARE(panel.resultLabel(QStringLiteral("perplexity"))->text(),
                 QString::number(std::exp(1.748766), 'f', 4));
        QCOMPARE(panel.resultLabel(QStringLiteral("meanNll"))->text(), QStringLiteral("1.74877"));
        QCOMPARE(panel.resultLabel(QStringLiteral("tokensPerSecond"))->text(),
                 QStringLiteral("22,528")); // 44 * 256 / 0.5
        QVERIFY(panel.runButton()->isEnabled());
        QVERIFY(!panel.isRunning());
        // A new run clears the old figures.
        panel.setRunning(true);
        QCOMPARE(panel.resultLabel(QStringLiteral("perplexity"))->text(), QStringLiteral("–"));
        QCOMPARE(panel.resultLabel(QStringLiteral("compute"))->text(), QStringLiteral("–"));
    }

    void failureIsShown() {
        qs::EvalPanel panel;
        panel.setModelLoaded(true);
        panel.setDataPath(QStringLiteral("/data/wiki.txt"));
        panel.setRunning(true);
        panel.showFailure(QStringLiteral("/data/wiki.txt: cannot open"));
        QVERIFY(panel.statusLabel()->text().contains(QStringLiteral("cannot open")));
        QVERIFY(panel.runButton()->isEnabled());
        QVERIFY(!panel.isRunning());
    }
};

QS_TEST_MAIN(TestEvalPanel)
#include "tst_evalpanel.moc"
