#include "export/ExportFolder.h"

#include "util/Error.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QUuid>

namespace qs {

namespace {

const char* kSideFiles[] = {
    "generation_config.json",  "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
    "special_tokens_map.json", "vocab.json",     "merges.txt"};

QString partialPrefix(const QFileInfo& out) {
    return "." + out.fileName() + ".partial-";
}

} // namespace

int ExportFolder::removeStalePartials(const std::string& outDir, int maxAgeSeconds) {
    const QFileInfo out(QString::fromStdString(outDir));
    const QDir parent(out.absolutePath());
    if (!parent.exists())
        return 0;
    const QDateTime now = QDateTime::currentDateTimeUtc();
    int removed = 0;
    const QStringList entries = parent.entryList({partialPrefix(out) + "*"},
                                                 QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot);
    for (const QString& e : entries) {
        const QFileInfo fi(parent.filePath(e));
        if (fi.lastModified().toUTC().secsTo(now) < maxAgeSeconds)
            continue; // possibly a run in progress
        if (QDir(fi.filePath()).removeRecursively())
            ++removed;
    }
    return removed;
}

ExportFolder::ExportFolder(const std::string& outDir) : m_outDir(outDir) {
    const QFileInfo out(QString::fromStdString(outDir));
    if (out.exists() && !out.isDir())
        throw Error(outDir, "", "exists and is not a folder");
    if (out.exists() && !QDir(out.filePath()).isEmpty() &&
        !QFile::exists(out.filePath() + "/quantscope_recipe.json"))
        throw Error(outDir, "",
                    "folder is not empty and holds no earlier Quantscope output; "
                    "choose an empty or new folder");
    const QString parent = out.absolutePath();
    if (!QDir().mkpath(parent))
        throw Error(outDir, "", "cannot create the parent folder");
    removeStalePartials(outDir);
    m_tempDir =
        (parent + "/" + partialPrefix(out) + QUuid::createUuid().toString(QUuid::Id128).left(8))
            .toStdString();
    if (!QDir().mkpath(QString::fromStdString(m_tempDir)))
        throw Error(m_tempDir, "", "cannot create a temporary folder");
}

ExportFolder::~ExportFolder() {
    if (!m_committed)
        QDir(QString::fromStdString(m_tempDir)).removeRecursively();
}

void ExportFolder::copySideFiles(const std::string& sourceDir, bool withConfig) {
    const QDir src(QString::fromStdString(sourceDir));
    const QString temp = QString::fromStdString(m_tempDir);
    auto copy = [&](const char* f) {
        if (src.exists(f) && !QFile::copy(src.filePath(f), temp + "/" + f))
            throw Error(m_outDir, f, "cannot copy from the source model");
    };
    if (withConfig)
        copy("config.json");
    for (const char* f : kSideFiles)
        copy(f);
}

void ExportFolder::writeText(const std::string& file, const std::string& text) {
    QFile f(QString::fromStdString(tempPath(file)));
    if (!f.open(QIODevice::WriteOnly) ||
        f.write(text.data(), qint64(text.size())) != qint64(text.size()) || !f.flush())
        throw Error(m_outDir, file, "cannot write: " + f.errorString().toStdString());
    f.close();
}

void ExportFolder::commit(const std::string& recipeJson) {
    writeText("quantscope_recipe.json", recipeJson);
    const QString out = QString::fromStdString(m_outDir);
    const QString temp = QString::fromStdString(m_tempDir);
    const QString old = temp + ".old";
    const bool hadOld = QFileInfo::exists(out);
    if (hadOld && !QDir().rename(out, old))
        throw Error(m_outDir, "", "cannot move the earlier output aside");
    if (!QDir().rename(temp, out)) {
        if (hadOld)
            QDir().rename(old, out);
        throw Error(m_outDir, "", "cannot move the new output into place");
    }
    if (hadOld)
        QDir(old).removeRecursively();
    m_committed = true;
}

} // namespace qs
