#include "io/GgufFolder.h"

#include "io/GgmlDequantize.h"
#include "io/GgufArchitecture.h"
#include "io/GgufFile.h"
#include "io/GgufTokenizer.h"
#include "io/SafetensorsFile.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Join.h"

#include <nlohmann/json.hpp>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QStandardPaths>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qs {

namespace {

using nlohmann::json;

// Undoes llama.cpp's q/k row order (convert_hf_to_gguf.py LlamaModel.permute): GGUF row
// h*d + 2*i + j holds Hugging Face row h*d + j*d/2 + i (d = rows per head, i < d/2, j < 2).
std::vector<float> unpermuteRows(const std::vector<float>& w, int64_t rows, int64_t cols,
                                 int64_t heads, const std::string& source,
                                 const std::string& name) {
    if (heads <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
        throw Error(source, name,
                    std::to_string(rows) + " rows do not split into " + std::to_string(heads) +
                        " heads of an even size (RoPE permutation)");
    const int64_t d = rows / heads, half = d / 2;
    std::vector<float> out(w.size());
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i)
            for (int64_t j = 0; j < 2; ++j)
                std::memcpy(out.data() + (h * d + j * half + i) * cols,
                            w.data() + (h * d + 2 * i + j) * cols, size_t(cols) * sizeof(float));
    return out;
}

// Part of the cache key: raise it when the conversion's output changes, so folders written by an
// older build are not reused.
constexpr int kConversionVersion = 1;

QString cacheFolderFor(const QFileInfo& file) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData((QString::number(kConversionVersion) + QChar('\n') + file.absoluteFilePath() +
               QChar('\n') + QString::number(file.size()) + QChar('\n') +
               QString::number(file.lastModified().toMSecsSinceEpoch()))
                  .toUtf8());
    QString base = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
    if (base.isEmpty())
        base = QDir::tempPath();
    return base + "/quantscope-gguf/" + file.completeBaseName() + "-" + h.result().toHex().left(16);
}

void writeInto(const std::string& ggufPath, const std::string& dir) {
    const auto file = GgufFile::open(ggufPath);
    const GgufHeader& h = file->header();
    const GgufValue* archValue = h.find("general.architecture");
    if (!archValue)
        throw Error(ggufPath, "general.architecture", "missing required metadata key");
    if (archValue->type != GgufValueType::String)
        throw Error(ggufPath, "general.architecture", "must be a string");
    const GgufArchitecture* arch = findGgufArchitecture(archValue->s);
    if (!arch) {
        std::vector<std::string> known;
        for (const GgufArchitecture& a : ggufArchitectures())
            known.push_back("\"" + a.name + "\"");
        throw Error(ggufPath, "general.architecture",
                    "architecture '" + archValue->s + "' is not opened from GGUF (" +
                        join(known, ", ", " and ") + " are)");
    }
    json config = ggufHfConfig(*arch, h, *file, ggufPath);
    const int64_t heads = config["num_attention_heads"], kvHeads = config["num_key_value_heads"];
    const std::string expertsKey = ggufHfKeyOf(*arch, "expert_count");
    const int64_t experts = expertsKey.empty() ? 0 : config.value(expertsKey, int64_t(0));

    // Refuse what cannot be read before writing anything. A stacked experts tensor becomes one
    // Hugging Face tensor per expert.
    std::vector<TensorInfo> layout;
    for (const GgufTensorInfo& t : h.tensors) {
        if (!ggmlCanDequantize(t.type))
            throw Error(ggufPath, t.name, "ggml " + ggmlTypeLabel(t.type) + " not supported");
        if (ggufIsStacked(*arch, t.name)) {
            if (t.dims.size() != 3 || t.dims[2] != experts)
                throw Error(ggufPath, t.name,
                            "expected a 3-D tensor of " + std::to_string(experts) + " experts");
            for (int e = 0; e < int(experts); ++e) {
                TensorInfo info;
                info.name = hfNameOf(*arch, t.name, e);
                info.dtype = DType::F32;
                info.shape = {t.dims[1], t.dims[0]};
                layout.push_back(info);
            }
            continue;
        }
        const std::string hf = hfNameOf(*arch, t.name);
        if (hf.empty())
            throw Error(ggufPath, t.name,
                        "has no Hugging Face name in the " + arch->name + " layout");
        TensorInfo info;
        info.name = hf;
        info.dtype = DType::F32;
        info.shape = t.shape();
        if (ggufIsRowVector(*arch, t.name) && info.shape.size() == 1)
            info.shape = {1, info.shape[0]};
        layout.push_back(info);
    }

    const GgufSpecialIds ids = writeGgufTokenizer(h, ggufPath, dir);
    if (ids.bos >= 0)
        config["bos_token_id"] = ids.bos;
    if (ids.eos >= 0)
        config["eos_token_id"] = ids.eos;
    writeFileAtomically(dir + "/config.json", config.dump(2) + "\n");

    SafetensorsWriter writer(dir + "/model.safetensors", layout,
                             {{"format", "pt"}, {"quantscope", "dequantized from GGUF"}});
    for (size_t k = 0; k < h.tensors.size(); ++k) {
        const GgufTensorInfo& t = h.tensors[k];
        std::vector<float> w = file->dequantize(t);
        const bool q = t.name.find(".attn_q.weight") != std::string::npos;
        const bool kProj = t.name.find(".attn_k.weight") != std::string::npos;
        if (arch->ropeRowsPermuted && (q || kProj) && t.dims.size() == 2)
            w = unpermuteRows(w, t.dims[1], t.dims[0], q ? heads : kvHeads, ggufPath, t.name);
        if (ggufIsStacked(*arch, t.name)) { // expert e's [out, in] rows after expert e-1's
            const size_t per = w.size() / size_t(experts);
            for (size_t e = 0; e < size_t(experts); ++e)
                writer.writeNext(w.data() + e * per, uint64_t(per) * sizeof(float));
            continue;
        }
        writer.writeNext(w.data(), uint64_t(w.size()) * sizeof(float));
    }
    writer.commit();
    writeFileAtomically(
        dir + "/gguf_source.json",
        json{{"gguf", QFileInfo(QString::fromStdString(ggufPath)).absoluteFilePath().toStdString()},
             {"version", h.version},
             {"tensors", h.tensors.size()}}
                .dump(2) +
            "\n");
}

} // namespace

bool isGgufPath(const std::string& path) {
    const QFileInfo info(QString::fromStdString(path));
    return info.isFile() && info.suffix().compare("gguf", Qt::CaseInsensitive) == 0;
}

void writeGgufAsCheckpoint(const std::string& ggufPath, const std::string& outDir) {
    const QString target = QString::fromStdString(outDir);
    if (QFileInfo::exists(target))
        throw Error(outDir, "", "already exists");
    const QString temp =
        target + ".tmp-" + QString::number(QRandomGenerator::global()->generate64(), 16);
    if (!QDir().mkpath(temp))
        throw Error(temp.toStdString(), "", "cannot create the conversion folder");
    try {
        writeInto(ggufPath, temp.toStdString());
    } catch (...) {
        QDir(temp).removeRecursively();
        throw;
    }
    if (std::rename(temp.toLocal8Bit().constData(), target.toLocal8Bit().constData()) != 0) {
        const int error = errno;
        QDir(temp).removeRecursively();
        // Another process converted the same file meanwhile: its folder is as good as ours.
        if (QFileInfo::exists(target + "/config.json"))
            return;
        throw Error(outDir, "",
                    "cannot rename " + temp.toStdString() + " into place: " + std::strerror(error));
    }
}

std::string resolveModelFolder(const std::string& path) {
    if (!isGgufPath(path))
        return path;
    const QFileInfo info(QString::fromStdString(path));
    const QString cache = cacheFolderFor(info);
    if (!QFileInfo::exists(cache + "/config.json")) {
        if (!QDir().mkpath(QFileInfo(cache).absolutePath()))
            throw Error(cache.toStdString(), "", "cannot create the GGUF cache folder");
        writeGgufAsCheckpoint(info.absoluteFilePath().toStdString(), cache.toStdString());
    }
    return cache.toStdString();
}

} // namespace qs
