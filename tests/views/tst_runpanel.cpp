// RunPanel: buttons follow the model and the one-run-at-a-time rule, progress and ETA follow the
// fraction, Evaluate is not here (the evaluation panel's, tst_evalpanel), and the sensitivity
// table (through its sorting proxy) passes QAbstractItemModelTester while rows
// stream in, under a caption naming their device and precision.
#include "RunPanel.h"
#include "RunSensitivityModel.h"
#include "TestMain.h"

#include <QAbstractItemModelTester>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>

class TestRunPanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void buttonsFollowTheState() {
        qs::RunPanel panel;
        const QList<QPushButton*> starts{panel.analyzeButton(), panel.quantizeButton(),
                                         panel.sensitivityButton()};
        // Issue 28: one evaluation UI; the run panel has no Evaluate of its own.
        for (QPushButton* b : panel.findChildren<QPushButton*>())
            QVERIFY2(!b->text().contains(QStringLiteral("Evaluate")), qPrintable(b->text()));
        for (QPushButton* b : starts)
            QVERIFY(!b->isEnabled());
        panel.setModelLoaded(true);
        for (QPushButton* b : starts)
            QVERIFY(b->isEnabled());
        QVERIFY(!panel.cancelButton()->isEnabled());
        QSignalSpy analyze(&panel, &qs::RunPanel::analyzeRequested);
        QTest::mouseClick(panel.analyzeButton(), Qt::LeftButton);
        QCOMPARE(analyze.count(), 1);

        panel.setRunning(QStringLiteral("Analyzing"));
        QVERIFY(panel.isRunning());
        for (QPushButton* b : starts)
            QVERIFY(!b->isEnabled());
        QVERIFY(panel.cancelButton()->isEnabled());
        QSignalSpy cancel(&panel, &qs::RunPanel::cancelRequested);
        QTest::mouseClick(panel.cancelButton(), Qt::LeftButton);
        QCOMPARE(cancel.count(), 1);
        panel.setIdle(QStringLiteral("Cancelled"));
        QVERIFY(!panel.isRunning());
        QCOMPARE(panel.statusLabel()->text(), QStringLiteral("Cancelled"));
        for (QPushButton* b : starts)
            QVERIFY(b->isEnabled());
    }

    void progressGivesAnEta() {
        qs::RunPanel panel;
        panel.setModelLoaded(true);
        panel.setRunning(QStringLiteral("Analyzing"));
        QTest::qWait(300);
        panel.setProgress(0.25, QStringLiteral("block 1 of 4"));
        QCOMPARE(panel.progressBar()->value(), 250);
        QCOMPARE(panel.statusLabel()->text(), QStringLiteral("block 1 of 4"));
        // 0.3 s for a quarter: about 0.9 s left, shown rounded to whole seconds.
        QVERIFY2(panel.timeLabel()->text().contains(QStringLiteral("left")),
                 qPrintable(panel.timeLabel()->text()));
        panel.setProgress(-1.0, QString()); // indeterminate keeps the bar where it was
        QCOMPARE(panel.progressBar()->value(), 250);
        QCOMPARE(qs::RunPanel::formatDuration(0.4), QStringLiteral("0 s"));
        QCOMPARE(qs::RunPanel::formatDuration(59.4), QStringLiteral("59 s"));
        QCOMPARE(qs::RunPanel::formatDuration(65), QStringLiteral("1:05"));
        QCOMPARE(qs::RunPanel::formatDuration(3725), QStringLiteral("1:02:05"));
    }

    // Issue 9: the progress bar, its percentage and the time left stay in view while a run runs,
    // however small the dock; only the results below scroll.
    void progressStaysInView() {
        qs::RunPanel panel;
        panel.resize(320, 260);
        panel.setModelLoaded(true);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRunning(QStringLiteral("Analyze"));
        panel.setProgress(0.5, QStringLiteral("block 2: analysing"));
        for (QWidget* w = panel.progressBar(); w; w = w->parentWidget())
            QVERIFY2(!qobject_cast<QScrollArea*>(w), "the progress bar is inside a scroll area");
        QVERIFY(!panel.progressBar()->visibleRegion().isEmpty());
        QVERIFY(!panel.timeLabel()->visibleRegion().isEmpty());
        QCOMPARE(panel.progressBar()->text(), QStringLiteral("50%"));
        QCOMPARE(qs::RunPanel::remainingText(0.5, 10.0), QStringLiteral("about 10 s left"));
        QVERIFY(qs::RunPanel::remainingText(0.01, 10.0).isEmpty());
    }

    // The sensitivity rows name the device and precision of the run that made them.
    void sensitivityNamesItsCompute() {
        qs::RunPanel panel;
        panel.setSensitivityCompute("cpu", "float16");
        QCOMPARE(panel.sensitivityComputeLabel()->text(),
                 QStringLiteral("Computed on cpu · float16"));
        panel.clearSensitivity(); // another model's, or another run's, rows are gone: so is it
        QCOMPARE(panel.sensitivityComputeLabel()->text(), QString());
    }

    void sensitivityRowsStreamAndSort() {
        qs::RunPanel panel;
        QAbstractItemModelTester sourceTester(panel.sensitivityModel());
        QAbstractItemModelTester proxyTester(panel.sensitivityView()->model());
        panel.addSensitivityRow({"a.q_proj", 6.5, 5.8, 0.02, 0.9, 0.05, 0.85});
        panel.addSensitivityRow({"a.down_proj", 9.25, 5.75, 0.01, 0.95, 0.04, 0.86});
        panel.addSensitivityRow({"a.up_proj", 6.0, 5.9, 0.125, 0.8, 0.06, 0.84});
        QCOMPARE(panel.sensitivityModel()->rowCount(), 3);
        QAbstractItemModel* view = panel.sensitivityView()->model();
        panel.sensitivityView()->sortByColumn(qs::RunSensitivityModel::AloneColumn,
                                              Qt::DescendingOrder);
        QCOMPARE(view->index(0, 0).data().toString(), QStringLiteral("a.down_proj"));
        QCOMPARE(view->index(0, qs::RunSensitivityModel::AloneColumn).data().toString(),
                 QStringLiteral("9.2500"));
        // Δ waits for the unquantized perplexity, which comes with the totals.
        QCOMPARE(view->index(0, qs::RunSensitivityModel::DeltaAloneColumn).data().toString(),
                 QStringLiteral("–"));
        QCOMPARE(view->index(2, 0).data().toString(), QStringLiteral("a.up_proj"));
        // Sorted by KL alone, the layer that moves the distribution most comes first, whatever
        // its perplexity says.
        panel.sensitivityView()->sortByColumn(qs::RunSensitivityModel::KlAloneColumn,
                                              Qt::DescendingOrder);
        QCOMPARE(view->index(0, 0).data().toString(), QStringLiteral("a.up_proj"));
        QCOMPARE(view->index(0, qs::RunSensitivityModel::KlAloneColumn).data().toString(),
                 QStringLiteral("0.125000"));
        QCOMPARE(view->index(0, qs::RunSensitivityModel::SameTopAloneColumn).data().toString(),
                 QStringLiteral("80.00"));
        // Issue 28: the totals give each layer's cost over the unquantized model, and the table
        // sorts by it, costliest first.
        qs::SensitivityResult totals;
        totals.fpPerplexity = 5.5;
        totals.fullPerplexity = 9.5;
        panel.showSensitivityTotals(totals);
        QCOMPARE(view->index(0, 0).data().toString(), QStringLiteral("a.down_proj"));
        QCOMPARE(view->index(0, qs::RunSensitivityModel::DeltaAloneColumn).data().toString(),
                 QStringLiteral("3.7500"));
        QCOMPARE(view->index(2, 0).data().toString(), QStringLiteral("a.up_proj"));
        QCOMPARE(view->index(2, qs::RunSensitivityModel::DeltaAloneColumn).data().toString(),
                 QStringLiteral("0.5000"));
        panel.clearSensitivity();
        QCOMPARE(panel.sensitivityModel()->rowCount(), 0);
    }
};

QS_TEST_MAIN(TestRunPanel)
#include "tst_runpanel.moc"
