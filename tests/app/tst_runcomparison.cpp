// Issue 28, the first runs a person makes, on stories260K through the real window: opening the
// model proposes a scheme and a calibration text (the shared one beside the model, later the
// last one a run used), so Analyze works on the first click and fills the error columns and the
// depth chart; a layer the recipe gives no scheme is not called "excluded". The runs made since
// the model was opened are kept: the tree shows the current run against an earlier one (Δ per
// metric cell, equal to the difference of the two runs' values), the depth chart overlays the
// earlier run's curves, and Evaluate shows the perplexity difference.
#include "DepthChart.h"
#include "EvalPanel.h"
#include "LayerDetailView.h"
#include "LayerTreeModel.h"
#include "MainWindow.h"
#include "PlotWidget.h"
#include "RecipeDefaults.h"
#include "RecipeDocument.h"
#include "RunPanel.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "WorkbenchPage.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLocale>
#include <QSettings>
#include <QSignalSpy>
#include <QUndoStack>
#include <QtTest>

#include <cmath>

namespace {

const QString kGate = QStringLiteral("model.layers.0.mlp.gate_proj");
const QString kDown = QStringLiteral("model.layers.4.mlp.down_proj");

} // namespace

class TestRunComparison : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QLocale::setDefault(QLocale::c());
        const QString home = qs::test::tempDir(QStringLiteral("runcomparison"));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(home + QStringLiteral("/config")));
        qputenv("XDG_DATA_HOME", QFile::encodeName(home + QStringLiteral("/data")));
        QCoreApplication::setOrganizationName(QStringLiteral("QuantscopeTest"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_runcomparison"));
        QSettings().clear();
        m_stories = qs::test::sharedPath(QStringLiteral("models/stories260K"));
    }

    void calibrationTextIsFoundBesideTheModel() {
        QCOMPARE(
            qs::RecipeDefaults::calibrationNear(m_stories),
            QDir::cleanPath(qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt"))));
        QVERIFY(qs::RecipeDefaults::calibrationNear(qs::test::tempDir(QStringLiteral("none")))
                    .isEmpty());
        qs::Recipe mine;
        mine.exclude = {"lm_head"};
        QCOMPARE(qs::RecipeDefaults::propose(mine, m_stories), mine); // the user's stays
    }

    void firstAnalyzeShowsErrors() {
        qs::MainWindow window;
        window.show();
        openAndWait(window);
        const qs::Recipe& recipe = window.recipeDocument()->recipe();
        QVERIFY(recipe.global.has_value());
        QCOMPARE(QString::fromStdString(recipe.global->name), QStringLiteral("int8"));
        QCOMPARE(
            QString::fromStdString(recipe.calibration.dataPath),
            QDir::cleanPath(qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt"))));
        QVERIFY(!window.recipeDocument()->undoStack()->canUndo()); // proposed, not an edit
        shrinkCalibration(window);

        qs::WorkbenchPage* page = window.workbenchPage();
        // Nothing to plot yet: the note, and no empty legend box over it.
        QVERIFY(!page->depthChart()->plot()->isLegendShown());
        analyze(window); // the first click, nothing else chosen
        for (int column :
             {qs::LayerTreeModel::WeightSqnrColumn, qs::LayerTreeModel::OutputSqnrLocalColumn,
              qs::LayerTreeModel::OutputSqnrAccumulatedColumn})
            QVERIFY2(page->layerValue(kGate, column).isValid(),
                     qPrintable(QString::number(column)));
        QVERIFY(page->depthChart()->plot()->seriesCount() > 0);
        QVERIFY(page->depthChart()->plot()->note().isEmpty());
        QVERIFY(page->depthChart()->plot()->isLegendShown());
        page->selectLayer(kGate);
        QVERIFY2(page->layerDetail()->headerText().contains(QStringLiteral("int8")),
                 qPrintable(page->layerDetail()->headerText()));

        // A recipe with no scheme: the layers are not quantized, but nothing is excluded.
        window.recipeDocument()->setGlobalScheme(qs::RecipeDocument::NoScheme);
        analyze(window);
        page->selectLayer(kDown);
        const QString header = page->layerDetail()->headerText();
        QVERIFY2(header.contains(QStringLiteral("not quantized")), qPrintable(header));
        QVERIFY2(!header.contains(QStringLiteral("excluded")), qPrintable(header));
        // The calibration text the runs used comes back with the next model.
        QCOMPARE(QSettings().value(QStringLiteral("recipe/lastCalibration")).toString(),
                 QString::fromStdString(window.recipeDocument()->recipe().calibration.dataPath));
    }

    void runsAreComparedSideBySide() {
        qs::MainWindow window;
        window.show();
        openAndWait(window);
        qs::WorkbenchPage* page = window.workbenchPage();
        qs::LayerTreeModel* model = page->layerTreeModel();
        QAbstractItemModelTester tester(model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        shrinkCalibration(window);
        qs::RunPanel* runs = window.runPanel();
        QCOMPARE(runs->compareCombo()->count(), 1); // "no other run"

        analyze(window); // run 1: int8 everywhere
        const double gateBefore =
            page->layerValue(kGate, qs::LayerTreeModel::OutputSqnrLocalColumn).toDouble();
        // Run 2: the outlier layer of the walk-through with per-token dynamic activations.
        window.recipeDocument()->addOverride(kGate,
                                             QStringLiteral("w_int8_a_int8_per_token_dynamic"));
        analyze(window);
        QCOMPARE(runs->compareCombo()->count(), 3);
        QVERIFY2(runs->compareCombo()->itemText(2).contains(QStringLiteral("1 override")),
                 qPrintable(runs->compareCombo()->itemText(2)));
        const double gateAfter =
            page->layerValue(kGate, qs::LayerTreeModel::OutputSqnrLocalColumn).toDouble();
        QVERIFY(gateAfter != gateBefore);
        const int depthSeries = page->depthChart()->plot()->seriesCount();

        runs->setComparedRun(1);
        QVERIFY(model->isComparing());
        const QModelIndex gate =
            model->indexOf(kGate).siblingAtColumn(qs::LayerTreeModel::OutputSqnrLocalColumn);
        QCOMPARE(gate.data(qs::LayerTreeModel::DeltaRole).toDouble(), gateAfter - gateBefore);
        QVERIFY2(gate.data().toString().contains(QStringLiteral("Δ")),
                 qPrintable(gate.data().toString()));
        QVERIFY(gate.data(Qt::ToolTipRole).toString().contains(QStringLiteral("run 1")));
        // A layer whose scheme did not change, analysed with the same inputs: Δ 0.
        const QModelIndex down =
            model->indexOf(kDown).siblingAtColumn(qs::LayerTreeModel::WeightSqnrColumn);
        QCOMPARE(down.data(qs::LayerTreeModel::DeltaRole).toDouble(), 0.0);
        // Every kind's curve again, dashed, for run 1.
        const qs::PlotWidget* plot = page->depthChart()->plot();
        QCOMPARE(plot->seriesCount(), depthSeries + 7);
        int overlaid = 0;
        for (const qs::PlotWidget::Series& s : plot->series())
            overlaid += s.name.endsWith(QStringLiteral("(run 1)")) ? 1 : 0;
        QCOMPARE(overlaid, 7); // q, k, v, o, gate, up, down

        runs->setComparedRun(-1);
        QVERIFY(!model->isComparing());
        QVERIFY(std::isnan(gate.data(qs::LayerTreeModel::DeltaRole).toDouble()));
        QCOMPARE(page->depthChart()->plot()->seriesCount(), depthSeries);

        // Evaluate: unquantized, quantized and their difference.
        window.recipeDocument()->setEvaluationData(
            qs::test::sharedPath(QStringLiteral("data/tinystories-eval.txt")));
        window.recipeDocument()->setEvaluationSeqLen(128);
        window.recipeDocument()->setEvaluationMaxWindows(4);
        QSignalSpy finished(&window, &qs::MainWindow::runFinished);
        QVERIFY(window.startRun(qs::RunKind::Evaluate));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        const auto outcome = finished.first().first().value<qs::RunOutcome>();
        QVERIFY(outcome.fullPrecision && outcome.perplexity);
        const double delta = outcome.perplexity->perplexity - outcome.fullPrecision->perplexity;
        const QString shown =
            window.workbenchPage()->evalPanel()->perplexityDifferenceLabel()->text();
        QVERIFY2(shown.startsWith((delta >= 0 ? QStringLiteral("+") : QString()) +
                                  QString::number(delta, 'f', 4)),
                 qPrintable(shown));

        // Another model starts without the runs of this one.
        openAndWait(window);
        QCOMPARE(runs->compareCombo()->count(), 1);
        QVERIFY(!model->isComparing());
    }

private:
    void openAndWait(qs::MainWindow& window) {
        QSignalSpy shown(&window, &qs::MainWindow::modelShown);
        window.openModel(m_stories);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
    }
    // A few short windows: the test is about the GUI, not the figures.
    static void shrinkCalibration(qs::MainWindow& window) {
        window.recipeDocument()->setCalibrationSamples(8);
        window.recipeDocument()->setCalibrationSeqLen(64);
    }
    static void analyze(qs::MainWindow& window) {
        QSignalSpy finished(&window, &qs::MainWindow::runFinished);
        QSignalSpy failed(&window, &qs::MainWindow::runFailed);
        QVERIFY(window.startRun(qs::RunKind::Analyze));
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, 120000);
        QVERIFY2(failed.isEmpty(),
                 failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    }

    QString m_stories;
};

QS_TEST_MAIN(TestRunComparison)
#include "tst_runcomparison.moc"
