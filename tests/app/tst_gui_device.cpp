// The workbench on the device under test: the GUI's Analyze and Evaluate, run on the device the
// Device box offers, give what `quantscope-cli analyze|eval --device D` gives for the saved
// recipe on the same device, and the results say which device made them.
//
// The device: QS_TEST_DEVICE (e.g. cuda on a GPU machine; it fails if the engine does not offer
// it), else cuda when the engine offers it, else the CPU. On a CPU-only build this is the CPU's
// GUI-against-CLI check; scripts/gpu-check.sh runs it with QS_TEST_DEVICE=cuda.
//
// Equality: the GUI and the CLI run the same code on the same inputs and device (one binary's
// engine, one recipe file), so every number is the same double; the CLI prints doubles with 17
// significant digits (round trip), so the comparison allows only a relative 1e-12 for that text
// conversion. A device-dependent reduction order would still make them differ by far more.
#include "EvalPanel.h"
#include "LayerTreeModel.h"
#include "MainWindow.h"
#include "RecipeDocument.h"
#include "RunPanel.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"
#include "engine/Job.h"

#include <QComboBox>
#include <QFile>
#include <QLocale>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>

namespace {

nlohmann::json cliJson(const QStringList& args) {
    const qs::test::CliRun run = qs::test::runCli(args);
    if (run.exitCode != 0)
        qFatal("quantscope-cli %s failed: %s", qPrintable(args.join(QLatin1Char(' '))),
               run.err.constData());
    return nlohmann::json::parse(run.out.toStdString());
}

bool same(double gui, const nlohmann::json& cli, QString* why) {
    if (cli.is_null()) { // infinite SQNR or no metric
        if (!std::isfinite(gui))
            return true;
        *why = QStringLiteral("CLI null, GUI %1").arg(gui, 0, 'g', 17);
        return false;
    }
    const double c = cli.get<double>();
    if (std::abs(gui - c) <= 1e-12 * std::abs(c))
        return true;
    *why = QStringLiteral("GUI %1, CLI %2").arg(gui, 0, 'g', 17).arg(c, 0, 'g', 17);
    return false;
}

nlohmann::json sqnrOf(const nlohmann::json& layer, const char* key) {
    return layer.at(key).is_null() ? nlohmann::json() : layer[key].at("sqnr_db");
}

} // namespace

class TestGuiDevice : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QLocale::setDefault(QLocale::c());
        const QString home = qs::test::tempDir(QStringLiteral("gui_device"));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(home + QStringLiteral("/config")));
        qputenv("XDG_DATA_HOME", QFile::encodeName(home + QStringLiteral("/data")));
        QCoreApplication::setOrganizationName(QStringLiteral("QuantscopeTest"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_gui_device"));
        m_work = home;
        m_stories = qs::test::sharedPath(QStringLiteral("models/stories260K"));
        m_calib = qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt"));
        m_eval = qs::test::sharedPath(QStringLiteral("data/tinystories-eval.txt"));
        const QStringList offered = qs::Engine::availableDevices();
        const QByteArray wanted = qgetenv("QS_TEST_DEVICE");
        if (!wanted.isEmpty()) {
            m_device = QString::fromLatin1(wanted);
            QVERIFY2(offered.contains(m_device),
                     qPrintable(QStringLiteral("QS_TEST_DEVICE=%1 but the engine offers only %2")
                                    .arg(m_device, offered.join(QStringLiteral(", ")))));
        } else {
            m_device = offered.contains(QStringLiteral("cuda")) ? QStringLiteral("cuda")
                                                                : QStringLiteral("cpu");
        }
        qInfo("device under test: %s (engine offers %s)", qPrintable(m_device),
              qPrintable(offered.join(QStringLiteral(", "))));
    }

    void analyzeAndEvaluateMatchTheCli() {
        qs::MainWindow window;
        window.show();
        QSignalSpy shown(&window, &qs::MainWindow::modelShown);
        window.openModel(m_stories);
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() == 1, 120000);
        qs::RecipeDocument* doc = window.recipeDocument();
        doc->setGlobalScheme(QStringLiteral("int8"));
        doc->setCalibrationData(m_calib);
        doc->setCalibrationSamples(8);
        doc->setCalibrationSeqLen(128);
        doc->setEvaluationData(m_eval);
        doc->setEvaluationSeqLen(128);
        doc->setEvaluationMaxWindows(8);
        // The device as a user picks it: in the Device box, from what the engine offers.
        QComboBox* deviceBox = window.workbenchPage()->evalPanel()->deviceBox();
        const int index = deviceBox->findText(m_device);
        QVERIFY2(index >= 0, qPrintable(m_device + QStringLiteral(" not in the Device box")));
        deviceBox->setCurrentIndex(index);

        QSignalSpy finished(&window, &qs::MainWindow::runFinished);
        QSignalSpy failed(&window, &qs::MainWindow::runFailed);
        QTest::mouseClick(window.runPanel()->analyzeButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, 600000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
        const QString recipePath = m_work + QStringLiteral("/device.recipe.json");
        QVERIFY(window.saveRecipe(recipePath));

        const nlohmann::json analysis =
            cliJson({QStringLiteral("analyze"), m_stories, QStringLiteral("--recipe"), recipePath,
                     QStringLiteral("--device"), m_device, QStringLiteral("--json"),
                     QStringLiteral("--no-channels")});
        qs::WorkbenchPage* page = window.workbenchPage();
        int compared = 0;
        for (const auto& [name, layer] : analysis.at("layers").items()) {
            const QString q = QString::fromStdString(name);
            const std::pair<int, nlohmann::json> checks[] = {
                {qs::LayerTreeModel::WeightSqnrColumn, sqnrOf(layer, "weight_error")},
                {qs::LayerTreeModel::OutputSqnrLocalColumn, sqnrOf(layer, "output_error_local")},
                {qs::LayerTreeModel::OutputSqnrAccumulatedColumn,
                 sqnrOf(layer, "output_error_accumulated")},
                {qs::LayerTreeModel::InputAbsmaxColumn, layer.at("input").at("absmax")},
            };
            for (const auto& [column, expected] : checks) {
                const QVariant gui = page->layerValue(q, column);
                QString why;
                QVERIFY2(
                    same(gui.isValid() ? gui.toDouble() : NAN, expected, &why),
                    qPrintable(QStringLiteral("%1 column %2: %3").arg(q).arg(column).arg(why)));
                ++compared;
            }
        }
        QVERIFY(compared >= 32);

        QTest::mouseClick(window.workbenchPage()->evalPanel()->evaluateButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 2, 600000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
        const auto outcome = finished.at(1).at(0).value<qs::RunOutcome>();
        QVERIFY(outcome.perplexity && outcome.fullPrecision && outcome.fidelity);
        // The result says which device made it.
        QCOMPARE(QString::fromStdString(outcome.perplexity->device), m_device);
        QCOMPARE(QString::fromStdString(outcome.fullPrecision->device), m_device);

        const nlohmann::json eval =
            cliJson({QStringLiteral("eval"), m_stories, QStringLiteral("--recipe"), recipePath,
                     QStringLiteral("--data"), m_eval, QStringLiteral("--eval-seq-len"),
                     QStringLiteral("128"), QStringLiteral("--max-windows"), QStringLiteral("8"),
                     QStringLiteral("--device"), m_device, QStringLiteral("--json")});
        QCOMPARE(QString::fromStdString(eval.at("device").get<std::string>()), m_device);
        QString why;
        QVERIFY2(same(outcome.perplexity->perplexity, eval.at("perplexity"), &why),
                 qPrintable(why));
        const nlohmann::json& fidelity = eval.at("fidelity");
        QVERIFY2(same(outcome.fidelity->perplexityBase.value,
                      fidelity.at("perplexity_base").at("value"), &why),
                 qPrintable(why));
        QVERIFY2(same(outcome.fidelity->klMean.value, fidelity.at("kl_mean").at("value"), &why),
                 qPrintable(why));
        QVERIFY2(same(outcome.fidelity->sameTop.value, fidelity.at("same_top").at("value"), &why),
                 qPrintable(why));
        // The Evaluate's full-precision perplexity is the unquantized model's own evaluation
        // (sumWindowNll on the device), not the fidelity report's PPL(base), which recomputes
        // it in double from the logits: compare it with the CLI's eval of the model itself.
        const nlohmann::json plain =
            cliJson({QStringLiteral("eval"), m_stories, QStringLiteral("--data"), m_eval,
                     QStringLiteral("--eval-seq-len"), QStringLiteral("128"),
                     QStringLiteral("--max-windows"), QStringLiteral("8"),
                     QStringLiteral("--device"), m_device, QStringLiteral("--json")});
        QVERIFY2(same(outcome.fullPrecision->perplexity, plain.at("perplexity"), &why),
                 qPrintable(why));
        qInfo("%s: perplexity %.9g (full precision %.9g), mean KL %.6g, same top %.6g",
              qPrintable(m_device), outcome.perplexity->perplexity,
              outcome.fullPrecision->perplexity, outcome.fidelity->klMean.value,
              outcome.fidelity->sameTop.value);
    }

private:
    QString m_work;
    QString m_stories;
    QString m_calib;
    QString m_eval;
    QString m_device;
};

QS_TEST_MAIN(TestGuiDevice)
#include "tst_gui_device.moc"
