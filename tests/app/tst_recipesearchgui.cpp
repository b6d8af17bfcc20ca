// The recipe search in the workbench, as a user drives it: Search in the Design Recipe dock runs
// in the engine over the recipe being designed and gives what `quantscope-cli recipe --auto`
// gives for the saved recipe (the same code on the same inputs: the same doubles, which the CLI's
// JSON prints round-trip); the selected frontier point shows in the layer tree as scheme
// changes; Apply replaces the recipe in one undoable step.
#include "FrontierView.h"
#include "LayerTreeModel.h"
#include "MainWindow.h"
#include "RecipeDocument.h"
#include "RecipeSearchController.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "WorkbenchPage.h"

#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

#include <nlohmann/json.hpp>

class TestRecipeSearchGui : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QLocale::setDefault(QLocale::c());
        const QString home = qs::test::tempDir(QStringLiteral("recipesearch_gui"));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(home + QStringLiteral("/config")));
        qputenv("XDG_DATA_HOME", QFile::encodeName(home + QStringLiteral("/data")));
        qputenv("QS_CACHE_DIR", QFile::encodeName(home + QStringLiteral("/cache")));
        QCoreApplication::setOrganizationName(QStringLiteral("QuantscopeTest"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_recipesearchgui"));
        m_work = home;
    }

    void searchPreviewApplyUndo() {
        const QString model = qs::test::sharedPath(QStringLiteral("models/stories260K"));
        const QString eval = qs::test::sharedPath(QStringLiteral("data/tinystories-eval.txt"));
        qs::MainWindow window;
        window.show();
        QSignalSpy shown(&window, &qs::MainWindow::modelShown);
        window.openModel(model);
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() == 1, 120000);
        qs::RecipeDocument* doc = window.recipeDocument();
        // The scheme the opened model proposes goes: recipe --auto takes a base recipe that names
        // none (the GUI's search drops it by itself).
        doc->setGlobalScheme(qs::RecipeDocument::NoScheme);
        doc->setCalibrationData(qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt")));
        doc->setCalibrationSamples(4);
        doc->setCalibrationSeqLen(64);
        doc->setEvaluationData(eval);
        doc->setEvaluationSeqLen(128);
        doc->setEvaluationMaxWindows(2);
        const QString recipePath = m_work + QStringLiteral("/base.recipe.json");
        QVERIFY(window.saveRecipe(recipePath));
        const qs::Recipe before = doc->recipe();

        qs::FrontierView* view = window.recipeSearch()->view();
        view->findChild<QLineEdit*>(QStringLiteral("searchCandidates"))
            ->setText(QStringLiteral("none,uint4_wo_32,int8"));
        view->setBudget(false, 8.0);
        view->findChild<QSpinBox*>(QStringLiteral("searchCostWindows"))->setValue(1);
        view->findChild<QComboBox*>(QStringLiteral("searchUnitCosts"))->setCurrentIndex(1);
        view->findChild<QSpinBox*>(QStringLiteral("searchRefineRounds"))->setValue(1);
        QSignalSpy resultShown(view, &qs::FrontierView::resultShown);
        QTest::mouseClick(view->findChild<QPushButton*>(QStringLiteral("searchButton")),
                          Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(resultShown.count() == 1, 300000);
        const qs::SchemeSearchResult& result = view->result();

        // What the CLI gives for the same recipe, candidates and budget.
        const qs::test::CliRun cli = qs::test::runCli(
            {QStringLiteral("recipe"),         QStringLiteral("--auto"),
             QStringLiteral("--model"),        model,
             QStringLiteral("--recipe"),       recipePath,
             QStringLiteral("--data"),         eval,
             QStringLiteral("--eval-seq-len"), QStringLiteral("128"),
             QStringLiteral("--max-windows"),  QStringLiteral("2"),
             QStringLiteral("--cost-windows"), QStringLiteral("1"),
             QStringLiteral("--unit-costs"),   QStringLiteral("scaled"),
             QStringLiteral("--refine"),       QStringLiteral("1"),
             QStringLiteral("--candidates"),   QStringLiteral("none,uint4_wo_32,int8"),
             QStringLiteral("--budget-bpw"),   QStringLiteral("8"),
             QStringLiteral("--json"),         QStringLiteral("--quiet")});
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        const nlohmann::json j = nlohmann::json::parse(cli.out.toStdString());
        QVERIFY(j.at("effective_bits").get<double>() == result.effectiveBits);
        QVERIFY(j.at("predicted").at("kl_mean").get<double>() == result.pick().predictedKl);
        QVERIFY(j.at("measured").at("kl_mean").get<double>() ==
                result.measuredFidelity->klMean.value);
        QCOMPARE(j.at("frontier").size(), result.frontier.size());
        QCOMPARE(result.costWindows, int64_t(1)); // the dock's "Costs on" reached the search
        QVERIFY(result.unitCosts == qs::UnitCosts::Scaled); // and its "Group costs"
        QCOMPARE(j.at("unit_costs").get<std::string>(), std::string("scaled"));
        // and its "Refine in context": one round ran (in the CLI too).
        QVERIFY(result.refinement && result.refinement->rounds.size() == 1);
        QCOMPARE(j.at("refinement").at("rounds").size(), size_t(1));

        // The chosen point is previewed in the layer tree: every block linear changes from
        // "none" (the recipe names no scheme yet) to its unit's scheme, or stays "none".
        qs::LayerTreeModel* tree = window.workbenchPage()->layerTreeModel();
        QVERIFY(tree->hasProposedRecipe());
        int quantized = 0;
        for (size_t u = 0; u < result.units.size(); ++u)
            if (result.candidates[size_t(result.pick().choice[u])] != "none")
                quantized += int(result.units[u].layers.size());
        QVERIFY(quantized > 0);
        QCOMPARE(tree->proposedChangeCount(), quantized);
        const QString first = QString::fromStdString(result.units[0].layers[0]);
        if (result.candidates[size_t(result.pick().choice[0])] != "none")
            QVERIFY(window.workbenchPage()
                        ->layerValue(first, qs::LayerTreeModel::SchemeColumn)
                        .toString()
                        .contains(QStringLiteral("\u2192")));

        // The slider moves along the frontier; Apply takes the point shown, as one undo step.
        auto* slider = view->findChild<QSlider*>(QStringLiteral("frontierSlider"));
        QCOMPARE(slider->value(), int(result.chosen));
        const int target = int(result.frontier.size()) - 1; // the least KL: nothing quantized
        slider->setValue(target);
        QCOMPARE(view->selectedPoint(), target);
        QCOMPARE(tree->proposedChangeCount(), 0);
        slider->setValue(0); // the smallest
        const qs::Recipe proposed = view->recipeAt(0);
        const int undoCount = doc->undoStack()->count();
        QTest::mouseClick(view->findChild<QPushButton*>(QStringLiteral("applyFrontierPoint")),
                          Qt::LeftButton);
        QCOMPARE(doc->undoStack()->count(), undoCount + 1);
        QVERIFY(doc->recipe().toJson() == proposed.toJson());
        QVERIFY(!tree->hasProposedRecipe());
        doc->undoStack()->undo();
        QVERIFY(doc->recipe().toJson() == before.toJson());
    }

private:
    QString m_work;
};

QS_TEST_MAIN(TestRecipeSearchGui)
#include "tst_recipesearchgui.moc"
