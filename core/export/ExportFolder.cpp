#include "export/ExportFolder.h"

#include "util/Error.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QUuid>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace qs {

namespace {

const char* kSideFiles[] = {
    "generation_config.json",  "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
    "special_tokens_map.json", "vocab.json",     "merges.txt"};

QString partialPrefix(const QFileInfo& out) {
    return "." + out.fileName() + ".partial-";
}

// mkdir -p with the OS reason on failure (QDir::mkpath only says that it failed).
void makeFolder(const QString& path) {
    if (QFileInfo(path).isDir())
        return;
    const QString parent = QFileInfo(path).absolutePath();
    if (parent != path)
        makeFolder(parent);
    if (::mkdir(QFile::encodeName(path).constData(), 0777) != 0 && errno != EEXIST)
        throw Error(path.toStdString(), "", std::string("cannot create: ") + std::strerror(errno));
}

// The PID in ".NAME.partial-PID-ID" names (0 for other names).
qint64 partialPid(const QString& name, const QString& prefix) {
    const QString rest = name.mid(prefix.size());
    if (!rest.contains('-'))
        return 0;
    bool ok = false;
    const qint64 pid = rest.section('-', 0, 0).toLongLong(&ok);
    return ok && pid > 0 ? pid : 0;
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
        // A folder named with its run's PID is stale once that process is gone; one without a
        // PID (older runs) once it is older than maxAgeSeconds.
        if (const qint64 pid = partialPid(e, partialPrefix(out)); pid > 0) {
            if (::kill(pid_t(pid), 0) == 0 || errno == EPERM)
                continue; // still running
        } else if (fi.lastModified().toUTC().secsTo(now) < maxAgeSeconds) {
            continue; // possibly a run in progress
        }
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
    makeFolder(parent);
    removeStalePartials(outDir);
    m_tempDir = (parent + "/" + partialPrefix(out) + QString::number(::getpid()) + "-" +
                 QUuid::createUuid().toString(QUuid::Id128).left(8))
                    .toStdString();
    makeFolder(QString::fromStdString(m_tempDir));
}

ExportFolder::~ExportFolder() {
    if (!m_committed)
        QDir(QString::fromStdString(m_tempDir)).removeRecursively();
}

void ExportFolder::copySideFiles(const std::string& sourceDir, bool withConfig, bool headUntied) {
    const QDir src(QString::fromStdString(sourceDir));
    const QString temp = QString::fromStdString(m_tempDir);
    auto copy = [&](const char* f) {
        if (src.exists(f) && !QFile::copy(src.filePath(f), temp + "/" + f))
            throw Error(m_outDir, f, "cannot copy from the source model");
    };
    if (withConfig && headUntied)
        writeText("config.json", sourceConfig(sourceDir, true).dump(2) + "\n");
    else if (withConfig)
        copy("config.json");
    for (const char* f : kSideFiles)
        copy(f);
}

nlohmann::json ExportFolder::sourceConfig(const std::string& sourceDir, bool headUntied) {
    const std::string path = sourceDir + "/config.json";
    std::ifstream in(path);
    if (!in)
        throw Error(path, "", "cannot read");
    nlohmann::json config;
    try {
        config = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
        throw Error(path, "", std::string("not valid JSON: ") + e.what());
    }
    if (!config.is_object())
        throw Error(path, "", "expected a JSON object");
    if (headUntied)
        config["tie_word_embeddings"] = false;
    return config;
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
