#include "TestSupport.h"

#include <QDir>
#include <QFileInfo>
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

} // namespace qs::test
