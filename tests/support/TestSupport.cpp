#include "TestSupport.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

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

} // namespace qs::test
