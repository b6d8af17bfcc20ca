// The quantscope executable's command line, run as a separate process (offscreen): --screenshot
// writes a PNG of the default 1400x900 window once the model (or the start page) is shown (after
// an analysis with --analyze, or of the recipe panel or layer detail only with --grab), a bad
// --recipe fails it with the reason, and contradictory arguments are refused with a message instead
// of starting the GUI.
#include "TestMain.h"
#include "TestSupport.h"
#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QtTest>

namespace {

struct Run {
    int exitCode = -1;
    QString stderrText;
};

// `shellPrefix`, when given, runs the GUI through /bin/bash -c PREFIX (e.g. a ulimit).
Run runGui(const QStringList& args, const QString& home, const QString& shellPrefix = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // A desktop's screen, as ctest gives the suites: the window's default size is bounded by it.
    env.insert(QStringLiteral("QT_QPA_PLATFORM"),
               QStringLiteral("offscreen:configfile=" QS_SOURCE_DIR
                              "/tests/support/offscreen-screen.json"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/config"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/data"));
    p.setProcessEnvironment(env);
    const QString gui = qs::test::binDir() + QStringLiteral("/quantscope");
    if (shellPrefix.isEmpty())
        p.start(gui, args);
    else
        p.start(QStringLiteral("/bin/bash"),
                QStringList{QStringLiteral("-c"),
                            shellPrefix + QStringLiteral("; exec \"$0\" \"$@\""), gui} +
                    args);
    if (!p.waitForStarted(10000))
        qFatal("cannot start %s (build the quantscope target)",
               qPrintable(qs::test::binDir() + QStringLiteral("/quantscope")));
    if (!p.waitForFinished(300000))
        p.kill();
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromLocal8Bit(p.readAllStandardError())};
}

} // namespace

class TestGuiCommandLine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Issue 28: --help and --version print without a display (over ssh, in CI); with the xcb
    // platform and no DISPLAY, constructing the QApplication aborts.
    void helpWithoutADisplay() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-help"));
        for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("--version")}) {
            const Run r = runGui({flag}, home,
                                 QStringLiteral("unset DISPLAY WAYLAND_DISPLAY; "
                                                "export QT_QPA_PLATFORM=xcb"));
            QVERIFY2(r.exitCode == 0, qPrintable(flag + QStringLiteral(": ") + r.stderrText));
        }
    }

    void screenshotOfARealModel() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli"));
        const QString png = home + QStringLiteral("/shots/stories.png");
        const Run r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                              QStringLiteral("--screenshot"), png},
                             home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        const QImage image(png);
        QVERIFY(!image.isNull());
        QCOMPARE(image.size(), QSize(1400, 900));
    }

    void screenshotOfTheStartPage() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-start"));
        const QString png = home + QStringLiteral("/start.png");
        const Run r = runGui({QStringLiteral("--screenshot"), png}, home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        QCOMPARE(QImage(png).size(), QSize(1400, 900));
        // No model was asked for, so none was written.
        QVERIFY(!QFileInfo::exists(home + QStringLiteral("/data")));
    }

    // Issue 9: a screenshot that cannot be written in full fails with the path and leaves
    // nothing under its name (full disk simulated by a zero file-size limit: writes get EFBIG).
    void screenshotOnAFullDiskFailsCleanly() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-full"));
        const QString png = home + QStringLiteral("/shots/start.png");
        QVERIFY(QDir().mkpath(home + QStringLiteral("/shots")));
        const Run r = runGui({QStringLiteral("--screenshot"), png}, home,
                             QStringLiteral("ulimit -f 0; trap '' XFSZ"));
        const QString& err = r.stderrText;
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(err.contains(QStringLiteral("start.png")), qPrintable(err));
        QCOMPARE(QDir(home + QStringLiteral("/shots"))
                     .entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot)
                     .size(),
                 0);
    }

    void screenshotFailsForABadFolder() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-bad"));
        const QString png = home + QStringLiteral("/bad.png");
        const Run r = runGui({home, QStringLiteral("--screenshot"), png}, home);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.stderrText.contains(QStringLiteral("config.json")), qPrintable(r.stderrText));
        QVERIFY(!QFileInfo::exists(png));
    }

    void contradictoryArgumentsAreRefused() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-args"));
        Run r = runGui({QStringLiteral("--demo"), home}, home);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.stderrText.contains(QStringLiteral("not both")), qPrintable(r.stderrText));
        r = runGui({home, home}, home);
        QCOMPARE(r.exitCode, 2);
        r = runGui({QStringLiteral("--analyze"), QStringLiteral("--demo")}, home);
        QCOMPARE(r.exitCode, 2); // --analyze only makes sense for a screenshot
        QVERIFY2(r.stderrText.contains(QStringLiteral("--screenshot")), qPrintable(r.stderrText));
        r = runGui({QStringLiteral("--evaluate"), QStringLiteral("--screenshot"),
                    home + QStringLiteral("/x.png")},
                   home);
        QCOMPARE(r.exitCode, 2); // nothing to evaluate without a model
        QVERIFY2(r.stderrText.contains(QStringLiteral("needs MODEL_DIR")),
                 qPrintable(r.stderrText));
        r = runGui({QStringLiteral("--grab"), QStringLiteral("menu"),
                    QStringLiteral("--screenshot"), home + QStringLiteral("/x.png")},
                   home);
        QCOMPARE(r.exitCode, 2);
    }

    void badRecipeFailsTheScreenshot() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-recipe"));
        const QString recipe = home + QStringLiteral("/broken.json");
        QFile f(recipe);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"format\": \"quantscope-recipe\", \"version\": 1, \"exclude\": [\"re:(\"]}");
        f.close();
        const QString png = home + QStringLiteral("/r.png");
        const Run r =
            runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                    QStringLiteral("--recipe"), recipe, QStringLiteral("--screenshot"), png},
                   home);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.stderrText.contains(QStringLiteral("broken.json")) &&
                     r.stderrText.contains(QStringLiteral("exclude[0]")),
                 qPrintable(r.stderrText));
        QVERIFY(!QFileInfo::exists(png));
    }

    void analyzedScreenshotWithARecipe() {
        const QString home = qs::test::tempDir(QStringLiteral("gui-cli-analyze"));
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        recipe.calibration.dataPath =
            qs::test::sharedPath(QStringLiteral("data/tinystories-calib.txt")).toStdString();
        recipe.calibration.numSamples = 4;
        recipe.calibration.seqLen = 64;
        const QString recipePath = home + QStringLiteral("/int8.json");
        recipe.save(recipePath.toStdString());
        const QString png = home + QStringLiteral("/analyzed.png");
        const QString recipePng = home + QStringLiteral("/recipe.png");
        Run r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                        QStringLiteral("--recipe"), recipePath, QStringLiteral("--analyze"),
                        QStringLiteral("--select"), QStringLiteral("model.layers.1.mlp.down_proj"),
                        QStringLiteral("--screenshot"), png},
                       home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        QCOMPARE(QImage(png).size(), QSize(1400, 900));
        r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                    QStringLiteral("--recipe"), recipePath, QStringLiteral("--pattern"),
                    QStringLiteral("*down_proj"), QStringLiteral("--grab"),
                    QStringLiteral("recipe"), QStringLiteral("--screenshot"), recipePng},
                   home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        const QImage part(recipePng);
        QVERIFY(!part.isNull());
        QVERIFY(part.width() < 1400); // the recipe dock only
        const QString detailPng = home + QStringLiteral("/detail.png");
        r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                    QStringLiteral("--grab"), QStringLiteral("detail"),
                    QStringLiteral("--screenshot"), detailPng},
                   home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        QCOMPARE(QImage(detailPng).size(), QSize(1200, 860)); // the layer detail dock only

        // Evaluate, then Sensitivity, then the runs panel alone (the per-layer table filled);
        // Evaluate alone, then the evaluation panel alone (perplexities and fidelity).
        recipe.evaluation.dataPath =
            qs::test::sharedPath(QStringLiteral("data/tinystories-eval.txt")).toStdString();
        recipe.evaluation.seqLen = 64;
        recipe.evaluation.maxWindows = 2;
        recipe.save(recipePath.toStdString());
        const QString runsPng = home + QStringLiteral("/runs.png");
        r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                    QStringLiteral("--recipe"), recipePath, QStringLiteral("--evaluate"),
                    QStringLiteral("--sensitivity"), QStringLiteral("--grab"),
                    QStringLiteral("runs"), QStringLiteral("--screenshot"), runsPng},
                   home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        QCOMPARE(QImage(runsPng).size(), QSize(560, 1000)); // the runs dock only
        // The evaluation panel alone.
        const QString evalPng = home + QStringLiteral("/evaluation.png");
        r = runGui({qs::test::sharedPath(QStringLiteral("models/stories260K")),
                    QStringLiteral("--recipe"), recipePath, QStringLiteral("--evaluate"),
                    QStringLiteral("--grab"), QStringLiteral("evaluation"),
                    QStringLiteral("--screenshot"), evalPng},
                   home);
        QVERIFY2(r.exitCode == 0, qPrintable(r.stderrText));
        QCOMPARE(QImage(evalPng).size(), QSize(480, 400));
    }
};

QS_TEST_MAIN(TestGuiCommandLine)
#include "tst_guicommandline.moc"
