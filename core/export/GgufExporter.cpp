#include "export/GgufExporter.h"
#include "export/GgufCodeBlocks.h"
#include "io/GgmlKQuants.h"
#include "io/GgmlTypes.h"
#include "io/GgufArchitecture.h"
#include "io/TensorDType.h"
#include "model/ConfigParser.h"
#include "model/ModelFamily.h"
#include "quant/Quantize.h"

#include "export/TensorBlocks.h"
#include "util/Error.h"
#include "util/HostTensor.h"
#include "util/Join.h"
#include "util/Protobuf.h"

#include <ATen/ATen.h>
#include <QFileInfo>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>

namespace qs {

namespace {

constexpr uint64_t kAlignment = kGgufAlignment;

// Minimal GGUF metadata serialisation (little endian, as GGUF is).
struct Kv {
    std::string bytes;
    uint64_t count = 0;
    template <typename T> void raw(T v) {
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void str(const std::string& s) {
        raw<uint64_t>(s.size());
        bytes += s;
    }
    void key(const std::string& k, uint32_t type) {
        str(k);
        raw<uint32_t>(type);
        ++count;
    }
    void u32(const std::string& k, uint32_t v) { key(k, 4), raw(v); }
    void f32(const std::string& k, float v) { key(k, 6), raw(v); }
    void string(const std::string& k, const std::string& v) { key(k, 8), str(v); }
    void boolean(const std::string& k, bool v) { key(k, 7), raw<uint8_t>(v ? 1 : 0); }
};

// SentencePiece ModelProto: field 1 = repeated SentencePiece {1: piece, 2: score, 3: type}.
struct Piece {
    std::string text;
    float score = 0.0f;
    int32_t type = 1; // NORMAL
};

std::vector<Piece> readSentencePieces(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error(file, "", "cannot read (GGUF needs the sentencepiece tokenizer.model)");
    const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<Piece> pieces;
    ProtoReader model(b, file);
    while (!model.atEnd()) {
        const ProtoReader::Key key = model.key();
        if (key.field != 1 || key.wire != 2) {
            model.skip(key.wire);
            continue;
        }
        const std::string m = model.bytes("pieces");
        ProtoReader piece(m, file);
        Piece p;
        while (!piece.atEnd()) {
            const ProtoReader::Key k = piece.key();
            if (k.field == 1 && k.wire == 2) {
                p.text = piece.bytes("piece");
            } else if (k.field == 2 && k.wire == 5) {
                const uint32_t bits = piece.fixed32("score");
                std::memcpy(&p.score, &bits, 4);
            } else if (k.field == 3 && k.wire == 0) {
                p.type = int32_t(piece.varint());
            } else {
                piece.skip(k.wire);
            }
        }
        pieces.push_back(std::move(p));
    }
    if (pieces.empty())
        throw Error(file, "pieces", "no pieces");
    return pieces;
}

// tokenizer.ggml.* from a sentencepiece tokenizer.model, with bos/eos from config.json.
void writeSentencePieceVocab(Kv& kv, const std::string& path, const nlohmann::json& cfg) {
    const std::vector<Piece> pieces = readSentencePieces(path);
    kv.string("tokenizer.ggml.model", "llama");
    kv.key("tokenizer.ggml.tokens", 9);
    kv.raw<uint32_t>(8);
    kv.raw<uint64_t>(pieces.size());
    for (const Piece& p : pieces)
        kv.str(p.text);
    kv.key("tokenizer.ggml.scores", 9);
    kv.raw<uint32_t>(6);
    kv.raw<uint64_t>(pieces.size());
    for (const Piece& p : pieces)
        kv.raw<float>(p.score);
    kv.key("tokenizer.ggml.token_type", 9);
    kv.raw<uint32_t>(5);
    kv.raw<uint64_t>(pieces.size());
    for (const Piece& p : pieces)
        kv.raw<int32_t>(p.type);
    for (size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i].type == 2) {
            kv.u32("tokenizer.ggml.unknown_token_id", uint32_t(i));
            break;
        }
    if (cfg.contains("bos_token_id") && cfg["bos_token_id"].is_number_integer())
        kv.u32("tokenizer.ggml.bos_token_id", cfg["bos_token_id"].get<uint32_t>());
    if (cfg.contains("eos_token_id") && cfg["eos_token_id"].is_number_integer())
        kv.u32("tokenizer.ggml.eos_token_id", cfg["eos_token_id"].get<uint32_t>());
}

// tokenizer.ggml.* read from tokenizer.json (GgufVocab.h), in the converter's key order.
void writeVocab(Kv& kv, const GgufVocab& v) {
    kv.string("tokenizer.ggml.model", v.model);
    kv.string("tokenizer.ggml.pre", v.pre);
    kv.key("tokenizer.ggml.tokens", 9);
    kv.raw<uint32_t>(8);
    kv.raw<uint64_t>(v.tokens.size());
    for (const std::string& t : v.tokens)
        kv.str(t);
    if (!v.scores.empty()) {
        kv.key("tokenizer.ggml.scores", 9);
        kv.raw<uint32_t>(6);
        kv.raw<uint64_t>(v.scores.size());
        for (float s : v.scores)
            kv.raw<float>(s);
    }
    kv.key("tokenizer.ggml.token_type", 9);
    kv.raw<uint32_t>(5);
    kv.raw<uint64_t>(v.types.size());
    for (int32_t t : v.types)
        kv.raw<int32_t>(t);
    if (!v.merges.empty()) {
        kv.key("tokenizer.ggml.merges", 9);
        kv.raw<uint32_t>(8);
        kv.raw<uint64_t>(v.merges.size());
        for (const std::string& m : v.merges)
            kv.str(m);
    }
    for (const auto& [key, id] : v.specialIds)
        kv.u32(key, id);
    for (const auto& [key, add] : v.addSpecial)
        kv.boolean(key, add);
}

at::Tensor floatOf(const Checkpoint& c, const std::string& name) {
    const TensorInfo& info = c.info(name);
    const std::optional<at::ScalarType> t = denseScalarType(info.dtype);
    if (!t || !at::isFloatingType(*t))
        throw Error(c.fileOf(name).path(), name, "GGUF export reads float tensors only");
    // An fp32 tensor is read in place from the mapped file (nothing is written to it); others
    // convert into a new tensor.
    return at::from_blob(const_cast<uint8_t*>(c.fileOf(name).data(info)), info.shape, *t)
        .to(at::kFloat);
}

// llama.cpp's converter undoes the HF rotate_half row order of q/k (LlamaModel.permute).
at::Tensor permuteForRope(const at::Tensor& w, int64_t heads) {
    return w.reshape({heads, 2, w.size(0) / heads / 2, w.size(1)})
        .transpose(1, 2)
        .reshape(w.sizes())
        .contiguous();
}

// llama_ftype of the file: the type most 2-D weight elements have (informational: llama.cpp
// reads each tensor's own type). Q4_K as LLAMA_FTYPE_MOSTLY_Q4_K_S: no tensor is promoted
// to a wider type, unlike llama-quantize's Q4_K_M mixture.
uint32_t fileTypeOf(const std::vector<GgufExporter::Entry>& entries) {
    std::map<GgmlType, int64_t> elements;
    for (const GgufExporter::Entry& e : entries)
        if (e.shape.size() >= 2) {
            int64_t n = 1;
            for (int64_t d : e.shape)
                n *= d;
            elements[e.type] += n;
        }
    GgmlType dominant = GgmlType::F32;
    int64_t most = -1;
    for (const auto& [type, n] : elements)
        if (n > most) {
            most = n;
            dominant = type;
        }
    return uint32_t(ggmlTypeTraits(dominant).fileType);
}

// The tokenizer.json vocabulary the export writes when the source has no tokenizer.model
// (read before any tensor is written, so a tokenizer llama.cpp cannot use stops the run at once).
std::optional<GgufVocab> tokenizerJsonVocab(const std::string& sourceDir, const nlohmann::json& cfg,
                                            const Checkpoint& source) {
    if (QFileInfo::exists(QString::fromStdString(sourceDir + "/tokenizer.model")))
        return std::nullopt;
    // llama.cpp needs one token per embedding row: config.json's vocab_size, as the
    // converter takes it, or the embedding's rows when the config has none.
    int64_t rows = cfg.value("vocab_size", int64_t(0));
    if (rows <= 0 && source.contains("model.embed_tokens.weight"))
        rows = source.info("model.embed_tokens.weight").shape.at(0);
    return tokenizerJsonGgufVocab(sourceDir, rows);
}

// The key-value section: general.* and the architecture's keys (<arch>.*, GgufArchitecture.h)
// from config.json, then the tokenizer.
Kv metadataOf(const std::string& sourceDir, const GgufArchitecture& arch,
              const std::optional<GgufVocab>& vocab, uint32_t fileType) {
    std::ifstream in(sourceDir + "/config.json");
    const nlohmann::json cfg = nlohmann::json::parse(in, nullptr, false);
    Kv kv;
    kv.string("general.architecture", arch.name);
    kv.string("general.name",
              QFileInfo(QString::fromStdString(sourceDir)).fileName().toStdString());
    kv.u32("general.alignment", uint32_t(kAlignment));
    kv.u32("general.file_type", fileType);
    for (const GgufKey& k : arch.keys) {
        const double v = ggufKeyValue(k, cfg);
        if (k.isFloat)
            kv.f32(arch.name + "." + k.key, float(v));
        else
            kv.u32(arch.name + "." + k.key, uint32_t(int64_t(v)));
    }
    if (vocab)
        writeVocab(kv, *vocab);
    else
        writeSentencePieceVocab(kv, sourceDir + "/tokenizer.model", cfg);
    return kv;
}

// The architecture row a model type's family declares (FamilyCapabilities::gguf); nullptr: none.
const GgufArchitecture* declaredArchitecture(const std::string& modelType) {
    const ModelFamily* family = findFamily(modelType);
    return family && family->capabilities().gguf ? findGgufArchitecture(family->capabilities().gguf)
                                                 : nullptr;
}

std::string notWritten(const std::string& modelType) {
    return "GGUF export writes the " +
           join(familiesWith(&FamilyCapabilities::gguf), ", ", " and ") + " families only, not '" +
           modelType + "'";
}

// The row for a config.json, or the refusal naming the families that have one.
const GgufArchitecture& architectureOf(const nlohmann::json& cfg, const std::string& source) {
    const std::string type = cfg.is_discarded() ? std::string("?") : cfg.value("model_type", "");
    const GgufArchitecture* arch = cfg.is_discarded() ? nullptr : declaredArchitecture(type);
    if (!arch)
        throw Error(source, "model_type", notWritten(type));
    return *arch;
}

bool isKQuant(GgmlType t) {
    return ggmlTypeTraits(t).blockSize == kGgmlSuperBlock;
}

} // namespace

std::string ggufModelProblem(const ModelConfig& c) {
    const GgufArchitecture* a = declaredArchitecture(c.modelType);
    if (!a)
        return notWritten(c.modelType);
    const std::string in = "llama.cpp's " + a->name + " ";
    if (!a->moeEveryLayer)
        return c.moe.numExperts > 0 ? in + "has no mixture of experts" : std::string();
    std::vector<std::string> dense;
    for (int64_t i = 0; i < c.numLayers; ++i)
        if (!c.isMoeLayer(i))
            dense.push_back(std::to_string(i));
    if (!dense.empty())
        return "layer " + join(dense, ", ", " and ") +
               " has a dense MLP (mlp_only_layers / decoder_sparse_step): " + in +
               "has a mixture of experts in every layer";
    if (c.moe.normTopK != a->normalisesTopK)
        return std::string("norm_topk_prob ") + (c.moe.normTopK ? "true" : "false") + ": " + in +
               (a->normalisesTopK ? "renormalises" : "does not renormalise") +
               " the chosen experts' weights";
    if (c.moe.sigmoidScores || c.moe.correctionBias || c.moe.numGroups != 1 ||
        c.moe.routedScaling != 1.0)
        return in + "routes by a softmax over every expert, without groups or scaling";
    if (a->sharedExpert && (c.moe.sharedIntermediate <= 0 || c.moe.sharedGateName.empty()))
        return in + "needs a shared expert with its sigmoid gate";
    if (c.tieWordEmbeddings)
        return "tie_word_embeddings true: " + in + "reads output.weight of its own";
    if (c.slidingWindow > 0)
        return "a sliding window: " + in + "attends to every position";
    if (c.rope.type != "default")
        return "RoPE scaling '" + c.rope.type + "': the GGUF export writes no RoPE scaling for " +
               a->name;
    return {};
}

GgmlType ggmlTypeForRow(GgmlType asked, int64_t rowLength) {
    if (ggmlIsFloat(asked))
        return asked;
    if (isKQuant(asked) && rowLength % kGgmlSuperBlock != 0)
        asked = asked == GgmlType::Q4_K ? GgmlType::Q5_0 : GgmlType::Q8_0;
    return rowLength % 32 == 0 ? asked : GgmlType::F32;
}

GgmlType ggufStoredType(const std::vector<int64_t>& shape, DType source,
                        const quant::QuantScheme* codes, std::optional<GgmlType> asked) {
    if (shape.size() != 2)
        return GgmlType::F32;
    const int64_t row = shape[1];
    if (codes && !(asked && ggmlIsFloat(*asked))) {
        if (row % 32 != 0) // no 32-blocks: F32 holds the dequantized weight exactly
            return GgmlType::F32;
        if (asked)
            return *asked;
        std::string why;
        if (const std::optional<GgmlType> t = ggufCodeBlockType(*codes, &why))
            return *t;
        throw Error("gguf", codes->label(), why); // refused by the format's problems check
    }
    if (asked)
        return ggmlTypeForRow(*asked, row);
    return source == DType::F16    ? GgmlType::F16
           : source == DType::BF16 ? GgmlType::BF16
                                   : GgmlType::F32;
}

const GgufArchitecture& ggufArchitectureOf(const std::string& sourceDir) {
    std::ifstream in(sourceDir + "/config.json");
    return architectureOf(nlohmann::json::parse(in, nullptr, false), sourceDir + "/config.json");
}

uint64_t ggufMetadataBytes(const std::string& sourceDir, const Checkpoint& source) {
    std::ifstream in(sourceDir + "/config.json");
    const nlohmann::json cfg = nlohmann::json::parse(in, nullptr, false);
    if (cfg.is_discarded())
        throw Error(sourceDir + "/config.json", "", "not valid JSON");
    // general.file_type is a u32 whatever its value: the size does not depend on it.
    return metadataOf(sourceDir, architectureOf(cfg, sourceDir + "/config.json"),
                      tokenizerJsonVocab(sourceDir, cfg, source), 0)
        .bytes.size();
}

uint64_t ggufTensorInfoBytes(const std::string& name, size_t dims) {
    // name (u64 length + bytes), n_dims u32, dims u64 each, type u32, offset u64
    return 8 + name.size() + 4 + 8 * dims + 4 + 8;
}

GgufExporter::GgufExporter(const ExportContext& context)
    : m_context(context), m_type(ggufTypeOf(context.options)), m_folder(context.outDir) {
    std::ifstream in(context.sourceDir + "/config.json");
    const nlohmann::json cfg = nlohmann::json::parse(in, nullptr, false);
    m_arch = &architectureOf(cfg, context.sourceDir + "/config.json");
    // What llama.cpp's architecture cannot compute stops the run before any tensor is read.
    if (const std::string why = ggufModelProblem(loadModelConfig(context.sourceDir)); !why.empty())
        throw Error(context.sourceDir + "/config.json", "model_type", why);
    m_heads = cfg.value("num_attention_heads", 0);
    m_kvHeads = cfg.value("num_key_value_heads", m_heads);
    std::vector<std::string> names = context.source->tensorNames();
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        const int ba = blockOfTensorName(a), bb = blockOfTensorName(b);
        return ba != bb ? ba < bb : a < b;
    });
    // One item per GGUF tensor, where the first of its parts lies in that order; a stacked
    // experts tensor gathers its experts in expert order.
    std::map<std::string, size_t> itemOf;
    for (const std::string& n : names) {
        const GgufTensorName g = ggufNameOf(*m_arch, n);
        if (g.name.empty())
            throw Error(context.sourceDir, n,
                        "has no GGUF name (llama.cpp's " + m_arch->name + " layout expected)");
        auto it = itemOf.find(g.name);
        if (it == itemOf.end()) {
            it = itemOf.emplace(g.name, m_items.size()).first;
            m_items.push_back({g.name, {}, g.expert >= 0, blockOfTensorName(n)});
        }
        Item& item = m_items[it->second];
        const size_t slot = size_t(std::max(g.expert, 0));
        if (item.parts.size() <= slot)
            item.parts.resize(slot + 1);
        if (!item.parts[slot].empty())
            throw Error(context.sourceDir, n, "a second tensor for " + g.name);
        item.parts[slot] = n;
    }
    const std::string expertsKey = ggufHfKeyOf(*m_arch, "expert_count");
    const int64_t experts = expertsKey.empty() ? 0 : cfg.value(expertsKey, int64_t(0));
    for (const Item& item : m_items) {
        const int64_t held = std::count_if(item.parts.begin(), item.parts.end(),
                                           [](const std::string& p) { return !p.empty(); });
        if (item.stacked && (held != experts || int64_t(item.parts.size()) != experts))
            throw Error(context.sourceDir, item.name,
                        "experts 0.." + std::to_string(item.parts.size() - 1) + " with " +
                            std::to_string(held) + " present, where config.json's " + expertsKey +
                            " is " + std::to_string(experts));
    }
    m_vocab = tokenizerJsonVocab(context.sourceDir, cfg, *context.source);
    m_spool.setFileName(QString::fromStdString(m_folder.tempPath("tensors.spool")));
    if (!m_spool.open(QIODevice::WriteOnly))
        throw Error(context.outDir, "tensors.spool", m_spool.errorString().toStdString());
}

GgufExporter::~GgufExporter() = default;

void GgufExporter::spool(Entry e, int64_t rows,
                         const std::function<void(int64_t, std::string&)>& row) {
    constexpr size_t kChunkBytes = size_t(8) << 20;
    std::string chunk;
    uint64_t written = 0;
    auto flush = [&] {
        if (m_spool.write(chunk.data(), qint64(chunk.size())) != qint64(chunk.size()))
            throw Error(m_context.outDir, e.name, m_spool.errorString().toStdString());
        written += chunk.size();
        chunk.clear();
    };
    for (int64_t r = 0; r < rows; ++r) {
        row(r, chunk);
        if (chunk.size() >= kChunkBytes)
            flush();
    }
    flush();
    e.size = written;
    m_entries.push_back(std::move(e));
}

void GgufExporter::add(const std::string& hfName, const at::Tensor& t,
                       std::optional<GgmlType> forced) {
    at::Tensor w = toHost(t).to(at::kFloat).contiguous();
    if (const int64_t heads = ropeHeadsOf(hfName))
        w = permuteForRope(w, heads);
    const std::string ggufName = ggufNameOf(*m_arch, hfName).name;
    if (!forced && ggufKeptF32(*m_arch, ggufName))
        forced = GgmlType::F32;
    const int64_t rowLen = w.dim() == 0 ? 1 : w.size(-1);
    const TensorInfo* source = m_context.source->find(hfName);
    const GgmlType type =
        forced
            ? *forced
            : ggufStoredType(w.sizes().vec(), source ? source->dtype : DType::F32, nullptr, m_type);
    Entry e{ggufName, w.sizes().vec(), type, uint64_t(m_spool.pos()), 0};
    const float* p = w.data_ptr<float>();
    spool(std::move(e), w.numel() / rowLen, [&](int64_t r, std::string& out) {
        out += ggmlQuantizeRow(p + r * rowLen, rowLen, type);
    });
}

void GgufExporter::addCodes(const std::string& hfName, const LayerPlan& plan,
                            const at::Tensor& weight) {
    if (const std::string r = ggufUnfitReason(*plan.scheme, plan.shape, m_type); !r.empty())
        throw Error(m_context.outDir, plan.name, r); // checked before the run; kept as a guard
    const int64_t out = plan.shape[0], in = plan.shape[1];
    const GgmlType type = ggufStoredType(plan.shape, DType::F32, &*plan.scheme, m_type);
    if (type == GgmlType::F32) { // no 32-blocks: F32 holds the dequantized weight exactly
        // A run that released the float weights (readsOnlyCodes) dequantizes the codes, which
        // gives the fake-quantized weight bit for bit (quant::dequantize).
        add(hfName,
            weight.defined() ? weight : quant::dequantize(*plan.weight.codes, plan.scheme->weight),
            GgmlType::F32);
        return;
    }
    CodeBlockRows rows = codeBlockRows(*plan.weight.codes, plan.scheme->weight, plan.shape);
    if (const int64_t heads = ropeHeadsOf(hfName)) { // the same row order as the float path
        rows.codes = permuteForRope(rows.codes, heads);
        rows.scale = permuteForRope(rows.scale, heads);
        rows.zeroPoint = permuteForRope(rows.zeroPoint, heads);
    }
    Entry e{ggufNameOf(*m_arch, hfName).name, {out, in}, type, uint64_t(m_spool.pos()), 0};
    const int64_t blocks = in / 32;
    spool(std::move(e), out, [&](int64_t r, std::string& bytes) {
        bytes += codeBlockRow(
            rows.codes.data_ptr<int32_t>() + r * in, rows.scale.data_ptr<float>() + r * blocks,
            rows.zeroPoint.data_ptr<int32_t>() + r * blocks, in, rows.dtype, type, plan.name);
    });
}

void GgufExporter::addFromSource(const std::string& hfName) {
    add(hfName, floatOf(*m_context.source, hfName));
    // Written: its mapped pages need not stay resident (the embedding and head are the
    // largest tensors of a small model).
    m_context.source->fileOf(hfName).releasePages(m_context.source->info(hfName));
}

bool GgufExporter::readsOnlyCodes() const {
    return !(m_type && ggmlIsFloat(*m_type));
}

int64_t GgufExporter::ropeHeadsOf(const std::string& hfName) const {
    if (!m_arch->ropeRowsPermuted)
        return 0;
    if (hfName.find("self_attn.q_proj.weight") != std::string::npos)
        return m_heads;
    if (hfName.find("self_attn.k_proj.weight") != std::string::npos)
        return m_kvHeads;
    return 0;
}

void GgufExporter::writeItem(const Item& item,
                             const std::function<void(const std::string&)>& writePart) {
    const size_t first = m_entries.size();
    for (const std::string& part : item.parts)
        writePart(part);
    if (!item.stacked)
        return;
    // The experts were spooled one after another: one 3-D tensor [experts, out, in] of them.
    Entry merged = m_entries[first];
    merged.name = item.name;
    merged.shape.insert(merged.shape.begin(), int64_t(m_entries.size() - first));
    merged.size = 0;
    for (size_t k = first; k < m_entries.size(); ++k) {
        const Entry& e = m_entries[k];
        if (e.type != merged.type || e.shape != m_entries[first].shape ||
            e.begin != merged.begin + merged.size)
            throw Error(m_context.outDir, item.name,
                        "the experts of one GGUF tensor must share shape and ggml type (" +
                            item.parts[k - first] + " is " + ggmlTypeTraits(e.type).name + ", " +
                            item.parts[0] + " " + ggmlTypeTraits(merged.type).name + ")");
        merged.size += e.size;
    }
    m_entries.resize(first);
    m_entries.push_back(std::move(merged));
}

void GgufExporter::copyUntil(int blockLimit) {
    while (m_next < m_items.size() && m_items[m_next].block < blockLimit)
        writeItem(m_items[m_next++], [&](const std::string& n) { addFromSource(n); });
}

void GgufExporter::writeLeading() {
    copyUntil(0);
}

void GgufExporter::writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) {
    copyUntil(index);
    const std::map<std::string, const at::Tensor*> weights = blockTensors(block, plans);
    std::map<std::string, const LayerPlan*> planOf; // "<linear>.weight" -> plan
    for (const LayerPlan& p : plans)
        planOf[p.name + ".weight"] = &p;
    const bool floatOnly = m_type && ggmlIsFloat(*m_type);
    while (m_next < m_items.size() && m_items[m_next].block == index)
        writeItem(m_items[m_next++], [&](const std::string& n) {
            const auto it = weights.find(n);
            const auto plan = planOf.find(n);
            if (it != weights.end() && plan != planOf.end() && plan->second->scheme &&
                plan->second->weight.codes && !floatOnly)
                addCodes(n, *plan->second, *it->second);
            else if (it != weights.end())
                add(n, *it->second);
            else
                addFromSource(n);
        });
}

void GgufExporter::commit(const std::string& recipeJson) {
    copyUntil(INT_MAX);
    while (m_next < m_items.size())
        writeItem(m_items[m_next++], [&](const std::string& n) { addFromSource(n); });
    m_spool.close();

    const Kv kv = metadataOf(m_context.sourceDir, *m_arch, m_vocab, fileTypeOf(m_entries));

    std::string head = "GGUF";
    auto raw = [&](auto v) { head.append(reinterpret_cast<const char*>(&v), sizeof v); };
    raw(uint32_t(3));
    raw(uint64_t(m_entries.size()));
    raw(uint64_t(kv.count));
    head += kv.bytes;
    uint64_t offset = 0;
    for (const Entry& e : m_entries) {
        raw(uint64_t(e.name.size()));
        head += e.name;
        raw(uint32_t(e.shape.size()));
        for (auto it = e.shape.rbegin(); it != e.shape.rend(); ++it)
            raw(uint64_t(*it)); // ne0 = the innermost (row) dimension
        raw(uint32_t(e.type));
        raw(offset);
        offset += (e.size + kAlignment - 1) / kAlignment * kAlignment;
    }
    uint64_t laid = kGgufFixedHeaderBytes + kv.bytes.size(); // what size accounting predicts
    for (const Entry& e : m_entries)
        laid += ggufTensorInfoBytes(e.name, e.shape.size());
    if (head.size() != laid)
        throw Error(m_context.outDir, "model.gguf",
                    "header of " + std::to_string(head.size()) + " bytes where its layout has " +
                        std::to_string(laid) + " (exporter bug)");
    head.append((kAlignment - head.size() % kAlignment) % kAlignment, '\0');

    const QString path = QString::fromStdString(m_folder.tempPath("model.gguf"));
    QFile outFile(path);
    QFile spool(m_spool.fileName());
    if (!outFile.open(QIODevice::WriteOnly) || !spool.open(QIODevice::ReadOnly))
        throw Error(m_context.outDir, "model.gguf", "cannot write");
    bool ok = outFile.write(head.data(), qint64(head.size())) == qint64(head.size());
    std::string buffer;
    for (const Entry& e : m_entries) {
        buffer.assign(e.size, '\0');
        ok = ok && spool.seek(qint64(e.begin)) &&
             spool.read(buffer.data(), qint64(e.size)) == qint64(e.size);
        buffer.append((kAlignment - e.size % kAlignment) % kAlignment, '\0');
        ok = ok && outFile.write(buffer.data(), qint64(buffer.size())) == qint64(buffer.size());
    }
    ok = ok && outFile.flush();
    if (!ok)
        throw Error(m_context.outDir, "model.gguf",
                    "cannot write: " + outFile.errorString().toStdString());
    outFile.close();
    spool.close();
    QFile::remove(spool.fileName());
    m_folder.copySideFiles(m_context.sourceDir, true, m_context.headUntied);
    m_folder.commit(recipeJson);
}

} // namespace qs
