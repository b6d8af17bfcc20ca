#include "export/FakeQuantCheckpointWriter.h"

#include "util/Error.h"
#include "util/HostTensor.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QUuid>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <climits>
#include <map>
#include <regex>

namespace qs {

namespace {

// Block index of a tensor name ("...layers.12...." → 12); -1 for tensors before the blocks
// (embeddings), INT_MAX for those after (final norm, head).
int blockOfName(const std::string& name) {
    static const std::regex re(R"(\.layers\.(\d+)\.)");
    std::smatch m;
    if (std::regex_search(name, m, re))
        return std::stoi(m[1].str());
    return name.find("embed") != std::string::npos ? -1 : INT_MAX;
}

at::ScalarType scalarTypeOf(DType t, const std::string& name) {
    switch (t) {
    case DType::F32:
        return at::kFloat;
    case DType::F16:
        return at::kHalf;
    case DType::BF16:
        return at::kBFloat16;
    case DType::F64:
        return at::kDouble;
    default:
        throw Error(name, "dtype", "cannot store fake-quantized values as " + dtypeName(t));
    }
}

const char* kSideFiles[] = {
    "config.json",           "generation_config.json",  "tokenizer.json", "tokenizer.model",
    "tokenizer_config.json", "special_tokens_map.json", "vocab.json",     "merges.txt"};

// mkdir -p with the OS reason on failure (QDir::mkpath only says that it failed).
void makeFolder(const QString& path, const std::string& field) {
    if (QFileInfo(path).isDir())
        return;
    const QString parent = QFileInfo(path).absolutePath();
    if (parent != path)
        makeFolder(parent, field);
    if (::mkdir(QFile::encodeName(path).constData(), 0777) != 0 && errno != EEXIST)
        throw Error(path.toStdString(), field,
                    std::string("cannot create: ") + std::strerror(errno));
}

// Temporary folders of earlier runs into the same output that were killed before they could
// remove theirs (".NAME.partial-PID-ID"); those of a live process are left alone.
void removeStalePartials(const QString& parent, const QString& name) {
    const QString prefix = "." + name + ".partial-";
    for (const QFileInfo& f : QDir(parent).entryInfoList(
             {prefix + "*"}, QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const qint64 pid = f.fileName().mid(prefix.size()).section('-', 0, 0).toLongLong(&ok);
        if (ok && pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM))
            continue; // still running
        QDir(f.filePath()).removeRecursively();
    }
}

} // namespace

FakeQuantCheckpointWriter::FakeQuantCheckpointWriter(const Checkpoint& source,
                                                     const std::string& sourceDir,
                                                     const std::string& outDir, int numBlocks)
    : m_source(source), m_sourceDir(sourceDir), m_outDir(outDir) {
    const QFileInfo out(QString::fromStdString(outDir));
    if (out.exists() && !out.isDir())
        throw Error(outDir, "", "exists and is not a folder");
    if (out.exists() && !QDir(out.filePath()).isEmpty() &&
        !QFile::exists(out.filePath() + "/quantscope_recipe.json"))
        throw Error(outDir, "",
                    "folder is not empty and holds no earlier Quantscope output; "
                    "choose an empty or new folder");
    const QString parent = out.absolutePath();
    makeFolder(parent, "");
    removeStalePartials(parent, out.fileName());
    m_tempDir = (parent + "/." + out.fileName() + ".partial-" + QString::number(::getpid()) + "-" +
                 QUuid::createUuid().toString(QUuid::Id128).left(8))
                    .toStdString();
    makeFolder(QString::fromStdString(m_tempDir), "");

    std::vector<std::string> names = source.tensorNames();
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        const int ba = blockOfName(a), bb = blockOfName(b);
        return ba != bb ? ba < bb : a < b;
    });
    for (const std::string& n : names) {
        TensorInfo info = source.info(n);
        info.name = n;
        const int b = blockOfName(n);
        if (b != -1 && b != INT_MAX && b >= numBlocks)
            throw Error(sourceDir, n, "belongs to a block beyond num_hidden_layers");
        m_layout.push_back(info);
        m_blockOf.push_back(b);
    }
    m_writer = std::make_unique<SafetensorsWriter>(
        m_tempDir + "/model.safetensors", m_layout,
        std::map<std::string, std::string>{{"format", "pt"}, {"quantscope", "fake-quantized"}});
}

FakeQuantCheckpointWriter::~FakeQuantCheckpointWriter() {
    m_writer.reset(); // removes its temporary file unless committed
    if (!m_committed)
        QDir(QString::fromStdString(m_tempDir)).removeRecursively();
}

void FakeQuantCheckpointWriter::copyRaw(const std::string& name) {
    const TensorInfo& info = m_source.info(name);
    m_writer->writeNext(m_source.fileOf(name).data(info), info.byteSize());
}

void FakeQuantCheckpointWriter::writeNextUntil(int blockLimit) {
    while (m_next < m_layout.size() && m_blockOf[m_next] < blockLimit) {
        copyRaw(m_layout[m_next].name);
        ++m_next;
    }
}

void FakeQuantCheckpointWriter::writeLeading() {
    writeNextUntil(0);
}

void FakeQuantCheckpointWriter::writeBlock(int index, DecoderBlock& block) {
    writeNextUntil(index);
    std::map<std::string, const at::Tensor*> weights;
    for (LinearLayer* l : block.linears())
        weights[l->name + ".weight"] = &l->weight;
    while (m_next < m_layout.size() && m_blockOf[m_next] == index) {
        const TensorInfo& info = m_layout[m_next];
        auto it = weights.find(info.name);
        if (it == weights.end()) {
            copyRaw(info.name);
        } else {
            const at::Tensor t = toHost(it->second->to(scalarTypeOf(info.dtype, info.name)));
            if (uint64_t(t.nbytes()) != info.byteSize())
                throw Error(m_outDir, info.name, "quantized weight size differs from the source");
            m_writer->writeNext(t.data_ptr(), info.byteSize());
        }
        ++m_next;
    }
}

void FakeQuantCheckpointWriter::commit(const std::string& recipeJson) {
    while (m_next < m_layout.size()) { // tensors after the blocks
        copyRaw(m_layout[m_next].name);
        ++m_next;
    }
    m_writer->commit();
    const QDir src(QString::fromStdString(m_sourceDir));
    const QString temp = QString::fromStdString(m_tempDir);
    for (const char* f : kSideFiles)
        if (src.exists(f) && !QFile::copy(src.filePath(f), temp + "/" + f))
            throw Error(m_outDir, f, "cannot copy from the source model");
    QFile recipe(temp + "/quantscope_recipe.json");
    if (!recipe.open(QIODevice::WriteOnly) ||
        recipe.write(recipeJson.data(), qint64(recipeJson.size())) != qint64(recipeJson.size()))
        throw Error(m_outDir, "quantscope_recipe.json", "cannot write");
    recipe.close();

    // Swap the finished folder into place; an earlier output is moved aside first and only
    // removed once the new one is there.
    const QString out = QString::fromStdString(m_outDir);
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
