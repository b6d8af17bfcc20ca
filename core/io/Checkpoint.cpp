#include "io/Checkpoint.h"

#include "io/JsonFields.h"
#include "util/Error.h"

#include <QDir>
#include <QFileInfo>

#include <set>

namespace qs {

namespace {

std::string join(const std::string& dir, const std::string& file) {
    return QDir(QString::fromStdString(dir)).filePath(QString::fromStdString(file)).toStdString();
}

bool exists(const std::string& path) {
    return QFileInfo::exists(QString::fromStdString(path));
}

} // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& directory) {
    if (!QFileInfo(QString::fromStdString(directory)).isDir())
        throw Error(directory, "", "not a folder");
    auto ckpt = std::unique_ptr<Checkpoint>(new Checkpoint);
    ckpt->m_directory = directory;

    const std::string indexPath = join(directory, "model.safetensors.index.json");
    const std::string singlePath = join(directory, "model.safetensors");
    if (exists(indexPath)) {
        const nlohmann::json index = parseJsonText(readTextFile(indexPath), indexPath);
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            throw Error(indexPath, "weight_map", "missing or not an object");
        std::map<std::string, size_t> fileIndex;
        for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
            if (!it->is_string())
                throw Error(indexPath, "weight_map." + it.key(), "expected a file name");
            const std::string file = it->get<std::string>();
            if (file.empty() || file.find('/') != std::string::npos || file == "..")
                throw Error(indexPath, "weight_map." + it.key(),
                            "file name '" + file + "' must be a plain name inside the folder");
            if (!fileIndex.count(file)) {
                const std::string path = join(directory, file);
                if (!exists(path))
                    throw Error(indexPath, "weight_map." + it.key(),
                                "shard '" + file + "' does not exist");
                fileIndex[file] = ckpt->m_files.size();
                ckpt->m_files.push_back(SafetensorsFile::open(path));
            }
            const SafetensorsFile& shard = *ckpt->m_files[fileIndex[file]];
            if (!shard.find(it.key()))
                throw Error(indexPath, "weight_map." + it.key(),
                            "tensor is not in shard '" + file + "'");
            ckpt->m_where[it.key()] = fileIndex[file];
        }
        // Tensors present in shards but missing from the index are reported rather than ignored:
        // an index that disagrees with its shards is a corrupt checkpoint.
        for (size_t i = 0; i < ckpt->m_files.size(); ++i)
            for (const TensorInfo& t : ckpt->m_files[i]->header().tensors)
                if (!ckpt->m_where.count(t.name))
                    throw Error(indexPath, "weight_map",
                                "tensor '" + t.name + "' of " + ckpt->m_files[i]->path() +
                                    " is missing from the index");
    } else if (exists(singlePath)) {
        ckpt->m_files.push_back(SafetensorsFile::open(singlePath));
        for (const TensorInfo& t : ckpt->m_files[0]->header().tensors)
            ckpt->m_where[t.name] = 0;
    } else {
        std::string hint;
        if (exists(join(directory, "pytorch_model.bin")) ||
            exists(join(directory, "pytorch_model.bin.index.json")))
            hint = " (pytorch_model.bin found: only safetensors checkpoints are read; convert it "
                   "with transformers' save_pretrained(safe_serialization=True))";
        throw Error(directory, "", "no model.safetensors or model.safetensors.index.json" + hint);
    }
    ckpt->m_ownFiles = ckpt->m_files.size();
    return ckpt;
}

std::map<std::string, size_t>::const_iterator Checkpoint::locate(const std::string& name) const {
    auto it = m_where.find(name);
    // transformers accepts checkpoints saved from the bare base model (e.g. OPT's
    // "decoder.layers..." without "model."), so the reader does too.
    if (it == m_where.end() && name.rfind("model.", 0) == 0)
        it = m_where.find(name.substr(6));
    return it;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
    auto it = locate(name);
    return it == m_where.end() ? nullptr : m_files[it->second]->find(it->first);
}

const TensorInfo& Checkpoint::info(const std::string& name) const {
    if (const TensorInfo* t = find(name))
        return *t;
    throw Error(m_directory, name, "tensor not found in the checkpoint");
}

const SafetensorsFile& Checkpoint::fileOf(const std::string& name) const {
    auto it = locate(name);
    if (it == m_where.end())
        throw Error(m_directory, name, "tensor not found in the checkpoint");
    return *m_files[it->second];
}

std::vector<std::string> Checkpoint::tensorNames() const {
    std::vector<std::string> names;
    names.reserve(m_where.size());
    for (const auto& kv : m_where)
        names.push_back(kv.first);
    return names;
}

std::vector<std::string> Checkpoint::files() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < m_ownFiles; ++i)
        out.push_back(
            QFileInfo(QString::fromStdString(m_files[i]->path())).fileName().toStdString());
    return out;
}

uint64_t Checkpoint::totalBytes() const {
    uint64_t total = 0;
    for (size_t i = 0; i < m_ownFiles; ++i)
        total += m_files[i]->fileSize();
    return total;
}

void Checkpoint::addOverlay(const std::string& path) {
    m_files.push_back(SafetensorsFile::open(path));
    for (const TensorInfo& t : m_files.back()->header().tensors)
        m_where[t.name] = m_files.size() - 1;
}

} // namespace qs
