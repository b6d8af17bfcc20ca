#pragma once

#include <QByteArray>
#include <QMap>
#include <QString>
#include <QStringList>

namespace qs::test {

// ../shared beside the repository (models, data, tokenizers). Tests that need it fail loudly when
// it is missing: CI always has it and must run them.
QString sharedDir();
QString sharedPath(const QString& relative);
// The folder with the built executables (quantscope-cli) and plugins.
QString binDir();
QString pluginDir();
// The Python interpreter with torch that reference scripts run under: QS_PYTHON when set (the
// test script's venv; a GPU machine's PyTorch), else Debian's /usr/bin/python3.
QString referencePython();
// A fresh temporary directory that lives as long as the test process.
QString tempDir(const QString& name);

// One run of the built quantscope-cli as a user runs it: exit code (-1 when it crashed), stdout
// and stderr. A run that takes over ten minutes is a hang and aborts the test.
struct CliRun {
    int exitCode;
    QByteArray out;
    QByteArray err;
};
CliRun runCli(const QStringList& args);

// Every file under `dir` by its path relative to `dir`, with its bytes; in a
// quantscope_recipe.json the provenance's created_at (when it was written, to the second) is
// left out: the one field two runs of the same recipe cannot share. For comparing two runs'
// outputs byte for byte.
QMap<QString, QByteArray> filesForComparison(const QString& dir);

} // namespace qs::test
