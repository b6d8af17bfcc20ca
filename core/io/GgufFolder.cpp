#include "io/GgufFolder.h"

#include "io/GgmlDequantize.h"
#include "io/GgufFile.h"
#include "io/GgufTokenizer.h"
#include "io/SafetensorsFile.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

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

const GgufValue& required(const GgufHeader& h, const std::string& key, const std::string& source) {
    const GgufValue* v = h.find(key);
    if (!v)
        throw Error(source, key, "missing required metadata key");
    return *v;
}

int64_t requiredCount(const GgufHeader& h, const std::string& key, const std::string& source) {
    const uint64_t v = required(h, key, source).toUnsigned(source, key);
    if (v == 0 || v > (uint64_t(1) << 31))
        throw Error(source, key, "value " + std::to_string(v) + " is not a plausible size");
    return int64_t(v);
}

// A float32 metadata value as the shortest decimal that reads back as the same float (1e-05,
// not 9.999999747378752e-06): the value the Hugging Face config the converter read had.
double metadataNumber(const GgufValue& v, const std::string& source, const std::string& key) {
    const double d = v.toNumber(source, key);
    if (v.type != GgufValueType::F32)
        return d;
    char text[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, d);
        if (float(std::strtod(text, nullptr)) == float(d))
            return std::strtod(text, nullptr);
    }
    return d;
}

// config.json of the Hugging Face LlamaForCausalLM the GGUF holds.
json llamaConfig(const GgufHeader& h, const GgufFile& file, const std::string& source) {
    const int64_t hidden = requiredCount(h, "llama.embedding_length", source);
    const int64_t heads = requiredCount(h, "llama.attention.head_count", source);
    int64_t kvHeads = heads;
    if (h.find("llama.attention.head_count_kv"))
        kvHeads = requiredCount(h, "llama.attention.head_count_kv", source);
    int64_t headDim = hidden / heads;
    if (h.find("llama.attention.key_length"))
        headDim = requiredCount(h, "llama.attention.key_length", source);
    const GgufTensorInfo* embed = file.find("token_embd.weight");
    if (!embed || embed->dims.size() != 2)
        throw Error(source, "token_embd.weight", "missing or not a matrix");
    json c;
    c["architectures"] = {"LlamaForCausalLM"};
    c["model_type"] = "llama";
    c["hidden_size"] = hidden;
    c["intermediate_size"] = requiredCount(h, "llama.feed_forward_length", source);
    c["num_hidden_layers"] = requiredCount(h, "llama.block_count", source);
    c["num_attention_heads"] = heads;
    c["num_key_value_heads"] = kvHeads;
    c["head_dim"] = headDim;
    c["vocab_size"] = embed->dims[1];
    c["max_position_embeddings"] =
        h.find("llama.context_length") ? requiredCount(h, "llama.context_length", source) : 2048;
    // The converter always writes the epsilon; the RoPE base defaults to 10000 as in llama.cpp.
    c["rms_norm_eps"] =
        metadataNumber(required(h, "llama.attention.layer_norm_rms_epsilon", source), source,
                       "llama.attention.layer_norm_rms_epsilon");
    c["rope_theta"] =
        h.find("llama.rope.freq_base")
            ? metadataNumber(*h.find("llama.rope.freq_base"), source, "llama.rope.freq_base")
            : 10000.0;
    c["rope_scaling"] = nullptr;
    if (const GgufValue* scaling = h.find("llama.rope.scaling.type")) {
        if (scaling->type != GgufValueType::String)
            throw Error(source, "llama.rope.scaling.type", "must be a string");
        if (scaling->s == "linear") {
            c["rope_scaling"] = {
                {"rope_type", "linear"},
                {"factor", metadataNumber(required(h, "llama.rope.scaling.factor", source), source,
                                          "llama.rope.scaling.factor")}};
        } else if (scaling->s != "none") {
            throw Error(source, "llama.rope.scaling.type",
                        "RoPE scaling '" + scaling->s + "' is not read from GGUF (linear is)");
        }
    }
    c["hidden_act"] = "silu";
    c["attention_bias"] = file.find("blk.0.attn_q.bias") != nullptr;
    c["mlp_bias"] = false;
    c["tie_word_embeddings"] = file.find("output.weight") == nullptr;
    c["torch_dtype"] = "float32";
    return c;
}

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
    const GgufValue& arch = required(h, "general.architecture", ggufPath);
    if (arch.type != GgufValueType::String)
        throw Error(ggufPath, "general.architecture", "must be a string");
    if (arch.s != "llama")
        throw Error(ggufPath, "general.architecture",
                    "architecture '" + arch.s +
                        "' is not opened from GGUF (the Llama family, \"llama\", is)");
    json config = llamaConfig(h, *file, ggufPath);
    const int64_t heads = config["num_attention_heads"], kvHeads = config["num_key_value_heads"];

    // Refuse what cannot be read before writing anything.
    std::vector<TensorInfo> layout;
    for (const GgufTensorInfo& t : h.tensors) {
        const std::string hf = hfNameOfGgufTensor(t.name);
        if (hf.empty())
            throw Error(ggufPath, t.name, "has no Hugging Face name in the llama layout");
        if (!ggmlCanDequantize(t.type))
            throw Error(ggufPath, t.name, "ggml " + ggmlTypeLabel(t.type) + " not supported");
        TensorInfo info;
        info.name = hf;
        info.dtype = DType::F32;
        info.shape = t.shape();
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
        if ((q || kProj) && t.dims.size() == 2)
            w = unpermuteRows(w, t.dims[1], t.dims[0], q ? heads : kvHeads, ggufPath, t.name);
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
