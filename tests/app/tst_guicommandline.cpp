// The quantscope executable's command line, run as a separate process (offscreen): --screenshot
// writes a PNG of the default 1400x900 window once the model (or the start page) is shown, and
// contradictory arguments are refused with a message instead of starting the GUI.
#include "TestSupport.h"

#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QtTest>

namespace {

struct Run {
    int exitCode = -1;
    QString stderrText;
};

Run runGui(const QStringList& args, const QString& home) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/config"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/data"));
    p.setProcessEnvironment(env);
    p.start(qs::test::binDir() + QStringLiteral("/quantscope"), args);
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
        r = runGui({QStringLiteral("--recipe"), home}, home); // not offered yet
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.stderrText.contains(QStringLiteral("recipe")), qPrintable(r.stderrText));
    }
};

QTEST_MAIN(TestGuiCommandLine)
#include "tst_guicommandline.moc"
