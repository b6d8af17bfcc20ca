#pragma once

#include "export/ExportFolder.h"
#include "export/Exporter.h"
#include "export/GgufFormat.h"
#include "export/GgufVocab.h"
#include "io/DType.h"
#include "io/GgmlTypes.h"
#include "quant/QuantScheme.h"

#include <QFile>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qs {

struct GgufArchitecture;
struct ModelConfig;

// Why the GGUF export cannot write this model, empty when it can: its family declares no llama.cpp
// architecture (FamilyCapabilities::gguf), or the architecture (io/GgufArchitecture.h) cannot
// compute what the config says (llama.cpp's qwen2moe: a dense MLP layer among the MoE ones,
// norm_topk_prob true, no gated shared expert, tied embeddings, a sliding window, RoPE scaling).
// The format's problems check and the exporter's constructor both ask it, before any work.
std::string ggufModelProblem(const ModelConfig& config);

// The architecture row the GGUF export writes the checkpoint in `sourceDir` as (its family's
// FamilyCapabilities::gguf); qs::Error naming the families that have one otherwise.
const GgufArchitecture& ggufArchitectureOf(const std::string& sourceDir);

// The type a float row of `rowLength` gets when `asked` does not fit it, llama.cpp's rules
// (llama-quant.cpp): a K-quant needs rows that are a multiple of 256 and falls back to Q5_0
// (Q4_K) or Q8_0 (Q6_K); a 32-block type needs a multiple of 32, else F32 (llama.cpp's last
// resort is F16; F32 keeps these few small tensors exact).
GgmlType ggmlTypeForRow(GgmlType asked, int64_t rowLength);

// The type the GGUF export stores a source tensor of `shape` and stored dtype `source` in, with
// the weight type `asked` (nullopt: auto). `codes`: the scheme of a quantized linear whose codes
// are written (ggufUnfitReason accepts it), nullptr for a float tensor. The one decision the
// exporter writes by and the size accounting (ExportSize.h) reads: 1-D tensors F32; codes in
// their block (auto: ggufCodeBlockType; rows not a multiple of 32: F32 of the dequantized
// weight), or the asked float type; float 2-D tensors ggmlTypeForRow of the asked type, or with
// auto the source's precision (F16, BF16, else F32).
GgmlType ggufStoredType(const std::vector<int64_t>& shape, DType source,
                        const quant::QuantScheme* codes, std::optional<GgmlType> asked);

// The file's layout, for size accounting (ExportSize.h): the fixed header (magic, version,
// tensor and key-value counts), the key-value section the export writes for the checkpoint in
// `sourceDir` (general.*, llama.* and the tokenizer, read as the exporter reads them), one tensor
// info per tensor, then the data: the header padded to kGgufAlignment and every tensor's data too.
constexpr uint64_t kGgufAlignment = 32;
constexpr uint64_t kGgufFixedHeaderBytes = 4 + 4 + 8 + 8;
uint64_t ggufMetadataBytes(const std::string& sourceDir, const Checkpoint& source);
uint64_t ggufTensorInfoBytes(const std::string& ggufName, size_t dims);

// GGUF v3 in llama.cpp's converter layout for the architecture the model's family declares
// (io/GgufArchitecture.h: llama, qwen2moe): <arch>.* metadata from config.json, sentencepiece
// tokenizer metadata from tokenizer.model (tokens, scores, types), or when there is none from
// tokenizer.json as llama.cpp's converter reads it (GgufVocab.h), tensors renamed (token_embd,
// blk.N.attn_q, ..., output_norm, output) with q/k rows permuted back to llama.cpp's RoPE layout
// where the architecture rotates adjacent pairs (llama), the experts of a MoE block stacked into
// one 3-D tensor per projection (blk.N.ffn_gate_exps, ...: each expert written as a 2-D linear is,
// one after another), routers and shared-expert gates F32.
//
// Quantized linears (a plan with integer codes) are written from the codes, never re-rounded
// (GgufCodeBlocks.h): with --gguf-type auto each in the block its plan maps to (int4 sym ->
// Q4_0, 4-bit asym -> Q4_1, int8 sym -> Q8_0); an explicit q4_0/q4_1/q8_0 must hold the plan's
// codes exactly (Q4_1 and Q8_0 also hold narrower 4-bit codes), else the format's problems check
// (GgufFormat.cpp) refuses the run before any block, naming the layer. K-quants hold no plan's
// codes. f32 writes the engine's dequantized weights exactly, f16 rounds them. Everything else
// (unquantized linears, embeddings, head) is float: ggml's reference quantizer of the asked type
// (rows that do not fit it: ggmlTypeForRow), or with auto the source's precision (F16 if stored as
// F16, else F32). 1-D tensors are F32.
class GgufExporter : public Exporter {
public:
    // The weight type from context.options (GgufFormat.h; absent: auto).
    explicit GgufExporter(const ExportContext& context);
    ~GgufExporter() override;
    std::string format() const override { return "gguf"; }
    void writeLeading() override;
    void writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) override;
    void commit(const std::string& recipeJson) override;
    // Quantized linears are written from their codes (a row that fits no 32-block, from the
    // codes dequantized), except with a float type (f32/f16/bf16), which writes the engine's
    // dequantized weights.
    bool readsOnlyCodes() const override;

    // One tensor of the file as spooled.
    struct Entry {
        std::string name;
        std::vector<int64_t> shape; // [out, in] (GGUF dims reversed on write)
        GgmlType type;
        uint64_t begin, size; // in the spool
    };

private:
    // One GGUF tensor and the source tensors it is written from (one, or a stacked tensor's
    // experts in expert order).
    struct Item {
        std::string name;
        std::vector<std::string> parts;
        bool stacked = false;
        int block = 0;
    };
    // Writes each part (writePart spools it as one entry), then merges a stacked item's entries.
    void writeItem(const Item& item, const std::function<void(const std::string&)>& writePart);
    // The head count whose RoPE rows `hfName` has permuted, 0 when kept.
    int64_t ropeHeadsOf(const std::string& hfName) const;
    void add(const std::string& hfName, const at::Tensor& floatTensor,
             std::optional<GgmlType> forced = std::nullopt);
    void addCodes(const std::string& hfName, const LayerPlan& plan, const at::Tensor& weight);
    // Writes one tensor to the spool row by row: `row(r, out)` appends row r's bytes to out;
    // rows are flushed in chunks of about 8 MiB, so a tensor never sits whole in memory as
    // bytes.
    // A tensor as the source checkpoint stores it (read in float), its pages released after.
    void addFromSource(const std::string& hfName);
    void spool(Entry entry, int64_t rows, const std::function<void(int64_t, std::string&)>& row);
    void copyUntil(int blockLimit);

    ExportContext m_context;
    std::optional<GgmlType> m_type; // nullopt: auto
    ExportFolder m_folder;
    const GgufArchitecture* m_arch = nullptr;
    std::vector<Item> m_items;
    size_t m_next = 0;
    QFile m_spool;
    std::vector<Entry> m_entries;
    int64_t m_heads = 0, m_kvHeads = 0;
    // The tokenizer.json's metadata when the source has no tokenizer.model, read before any
    // tensor is written so that a tokenizer llama.cpp cannot use stops the run at once.
    std::optional<GgufVocab> m_vocab;
};

} // namespace qs
