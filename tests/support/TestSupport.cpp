#include "TestSupport.h"
#include "TestMain.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <memory>
#include <vector>

namespace qs::test {

QString sharedDir() {
    const QByteArray env = qgetenv("QS_SHARED_DIR");
    return QDir::cleanPath(env.isEmpty() ? QStringLiteral(QS_SHARED_DIR)
                                         : QString::fromLocal8Bit(env));
}

QString sharedPath(const QString& relative) {
    const QString path = sharedDir() + QLatin1Char('/') + relative;
    if (!QFileInfo::exists(path))
        qFatal("shared test data missing: %s (set QS_SHARED_DIR)", qPrintable(path));
    return path;
}

QString binDir() {
    return QStringLiteral(QS_BIN_DIR);
}
QString pluginDir() {
    return QStringLiteral(QS_PLUGIN_DIR);
}

QString referencePython() {
    const QByteArray env = qgetenv("QS_PYTHON");
    return env.isEmpty() ? QStringLiteral("/usr/bin/python3") : QString::fromLocal8Bit(env);
}

QString tempDir(const QString& name) {
    static std::vector<std::unique_ptr<QTemporaryDir>> dirs;
    dirs.push_back(std::make_unique<QTemporaryDir>(QDir::tempPath() + "/qs-" + name + "-XXXXXX"));
    return dirs.back()->path();
}

CliRun runCli(const QStringList& args) {
    QProcess p;
    p.start(binDir() + QStringLiteral("/quantscope-cli"), args);
    if (!p.waitForFinished(600000))
        qFatal("quantscope-cli timed out");
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

namespace {

// Whether Qt Test can take one more logger (-o FILE,tap) beside the caller's options: not with
// the single-logger options (-txt, -xml, ...) nor with -o FILE without a format.
bool canAddLogger(const QStringList& args) {
    static const QStringList singleLogger{"-txt", "-csv",      "-junitxml", "-xunitxml",
                                          "-xml", "-lightxml", "-teamcity", "-tap"};
    for (int i = 0; i < args.size(); ++i) {
        if (singleLogger.contains(args[i]))
            return false;
        if (args[i] == QLatin1String("-o") && i + 1 < args.size() &&
            !args[i + 1].contains(QLatin1Char(',')))
            return false;
    }
    return true;
}

// Reads Qt Test's TAP log: true when no test function ran, i.e. initTestCase skipped (then
// nothing else runs) or every function and data row skipped. initTestCase and cleanupTestCase
// passing do not count as a function that ran.
bool noFunctionRan(const QString& tapPath) {
    QFile f(tapPath);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return false;
    static const QRegularExpression line(QStringLiteral("^(not )?ok \\d+ - (.*)$"));
    int ran = 0, skipped = 0;
    while (!f.atEnd()) {
        const QRegularExpressionMatch m = line.match(QString::fromUtf8(f.readLine()).trimmed());
        if (!m.hasMatch())
            continue;
        const QString entry = m.captured(2);
        const bool skip = !m.hasCaptured(1) && entry.contains(QLatin1String(" # SKIP"));
        const QString function = entry.section(QLatin1Char('('), 0, 0);
        if (skip)
            ++skipped;
        else if (function != QLatin1String("initTestCase") &&
                 function != QLatin1String("cleanupTestCase"))
            ++ran;
    }
    return ran == 0 && skipped > 0;
}

} // namespace

int runSuite(QObject* suite, int argc, char** argv) {
    QStringList args;
    for (int i = 0; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    if (!canAddLogger(args))
        return QTest::qExec(suite, args);
    QTemporaryDir dir;
    const QString tap = dir.path() + QStringLiteral("/suite.tap");
    if (!args.contains(QLatin1String("-o")))
        args << QStringLiteral("-o") << QStringLiteral("-,txt"); // the default logger, kept
    args << QStringLiteral("-o") << tap + QStringLiteral(",tap");
    const int failed = QTest::qExec(suite, args);
    if (failed == 0 && noFunctionRan(tap)) {
        std::fprintf(stdout,
                     "No test function ran (all skipped): exit code %d, which ctest "
                     "reports as Skipped\n",
                     kSuiteSkipped);
        return kSuiteSkipped;
    }
    return failed;
}

QMap<QString, QByteArray> filesForComparison(const QString& dir) {
    QMap<QString, QByteArray> all;
    QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        QByteArray bytes = f.readAll();
        if (path.endsWith("quantscope_recipe.json")) {
            QJsonObject recipe = QJsonDocument::fromJson(bytes).object();
            QJsonObject provenance = recipe["provenance"].toObject();
            provenance.remove("created_at");
            recipe["provenance"] = provenance;
            bytes = QJsonDocument(recipe).toJson();
        }
        all.insert(QDir(dir).relativeFilePath(path), bytes);
    }
    return all;
}

} // namespace qs::test
