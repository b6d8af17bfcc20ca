#pragma once

#include "export/ExportFolder.h"
#include "export/Exporter.h"

#include <QFile>

#include <cstdint>
#include <string>
#include <vector>

namespace qs {

// ggml's reference quantizers (ggml-quants.c quantize_row_*_ref), one row of n (multiple of
// 32) floats to blocks: Q8_0 {f16 d = amax/127; int8 q = round(x/d)}, Q4_0 {f16 d = max/-8
// (max = the signed value of largest magnitude); q = min(15, (int8)(x/d + 8.5))}, Q4_1
// {f16 d = (max-min)/15, f16 m = min; q = min(15, (int8)((x-min)/d + 0.5))}; F16 round to
// nearest even. The multiplications by the reciprocal and the casts are ggml's, in its order.
std::string ggmlQuantizeRow(const float* x, int64_t n, GgmlType type);
// "f32", "f16", "q8_0", "q4_0", "q4_1" (case-insensitive); qs::Error naming --gguf-type.
GgmlType ggmlTypeFromName(const std::string& name);
// Bytes of one row of n elements.
uint64_t ggmlRowBytes(int64_t n, GgmlType type);

// GGUF v3 for the Llama family (llama.cpp's converter layout): llama.* metadata from
// config.json, sentencepiece tokenizer metadata from tokenizer.model (tokens, scores, types),
// tensors renamed (token_embd, blk.N.attn_q, ..., output_norm, output) with q/k rows permuted
// back to llama.cpp's RoPE layout. 2-D weights whose rows are a multiple of 32 take `type`,
// everything else F32 (llama.cpp's own fallback). Weights come from the block as the pipeline
// left them (fake-quantized values), then ggml's reference quantizer rounds them.
class GgufExporter : public Exporter {
public:
    GgufExporter(const ExportContext& context, GgmlType type);
    ~GgufExporter() override;
    std::string format() const override { return "gguf"; }
    void writeLeading() override;
    void writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) override;
    void commit(const std::string& recipeJson) override;

    static std::string ggufName(const std::string& hfName); // empty: not exported

private:
    struct Entry {
        std::string name;
        std::vector<int64_t> shape; // [out, in] (GGUF dims reversed on write)
        GgmlType type;
        uint64_t begin, size; // in the spool
    };
    void add(const std::string& hfName, const at::Tensor& floatTensor);
    void copyUntil(int blockLimit);

    ExportContext m_context;
    GgmlType m_type;
    ExportFolder m_folder;
    std::vector<std::string> m_names;
    std::vector<int> m_blockOf;
    size_t m_next = 0;
    QFile m_spool;
    std::vector<Entry> m_entries;
    int64_t m_heads = 0, m_kvHeads = 0;
};

} // namespace qs
