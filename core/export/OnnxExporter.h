#pragma once

#include "export/ExportFolder.h"
#include "export/Exporter.h"
#include "export/OnnxProto.h"
#include "export/StoredTensor.h"
#include "model/ModelConfig.h"
#include "model/ModuleNode.h"
#include "quant/QuantScheme.h"

#include <QFile>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace qs {

// One initializer the ONNX export writes for a linear: the table weightDequantized and
// quantizeDequantize write by (the raw bytes they produce must fill it exactly) and the size
// accounting (ExportSize.h) reads.
struct OnnxTensor {
    std::string name;
    onnx::ElemType type = onnx::ElemType::Float;
    std::vector<int64_t> dims;
    StoredRole role = StoredRole::Codes;
    uint64_t bytes() const; // raw_data bytes (onnx::rawBytes)
};

// The Llama-style decoders whose family declares `onnx` (FamilyCapabilities: llama, mistral,
// qwen2, qwen3) as one ONNX graph, model.onnx:
// input_ids int64 [batch, sequence] -> logits float32 [batch, sequence, vocab], no KV cache,
// every position attends causally (and within the sliding window where the config has one).
// Standard ONNX operators only: Gather (embedding), RMSNorm as Mul/ReduceMean/Add/Sqrt/
// Reciprocal/Mul (the order of the engine's x * rsqrt(mean(x^2) + eps) * w), RoPE from cos/sin
// tables of kMaxTablePositions rows sliced to the input length, GQA by Unsqueeze/Expand/Reshape
// (transformers' repeat_kv order), Softmax attention, SiLU as x * Sigmoid(x), LM head MatMul.
//
// Quantized linears are QDQ: the weight's integer (or fp8) codes from the plan, transposed to
// [in, out] for MatMul, with DequantizeLinear (per tensor; per channel with `axis`; per group
// with `block_size`, opset 21); a static input quantizer becomes QuantizeLinear ->
// DequantizeLinear with its frozen scale and zero point on the MatMul input (a static output
// quantizer, the KV cache, the same on the output). The opset is the lowest the recipe needs:
// 13 (int8/uint8), 19 (fp8 e4m3/e5m2), 21 (int4/uint4, blocked). Float tensors are fp32.
//
// The graph streams block by block to a spool file (nodes and initializers are graph fields in
// any order) and is wrapped into the ModelProto at commit. A protobuf message is limited to
// 2 GiB: models whose weights (as fp32) exceed kExternalDataAbove keep every initializer of at
// least kExternalMinBytes in model.onnx.data (ONNX external data, offsets aligned to 4 KiB),
// written as the blocks arrive; QS_ONNX_EXTERNAL_DATA=1 forces that layout (tests), =0 forbids it.
class OnnxExporter : public Exporter {
public:
    static constexpr uint64_t kMaxProtoBytes = (uint64_t(1) << 31) - 1;
    static constexpr uint64_t kExternalDataAbove = uint64_t(1) << 30;
    static constexpr uint64_t kExternalMinBytes = 1024;
    static constexpr const char* kDataFile = "model.onnx.data";
    // Rows of the RoPE tables: inputs up to this length (or max_position_embeddings when
    // smaller) run.
    static constexpr int64_t kMaxTablePositions = 8192;

    explicit OnnxExporter(const ExportContext& context);
    ~OnnxExporter() override;

    std::string format() const override { return "onnx"; }
    void writeLeading() override;
    void writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) override;
    void commit(const std::string& recipeJson) override;

    // Why the model cannot be written (family, layout, RoPE variant); empty when it can.
    static std::string modelReason(const ModelConfig& config);
    // Why a linear with `scheme` cannot be written, with what works instead; empty when it can.
    static std::string unfitReason(const quant::QuantScheme& scheme);
    // Why a static activation quantizer (input, or output/KV cache) cannot be; empty when it can.
    static std::string activationReason(const quant::QuantSpec& spec, const std::string& role);
    // ONNX's type of a weight or activation data type (int4, uint4, int8, uint8, fp8); qs::Error
    // for any other.
    static onnx::ElemType elemType(quant::DataType type);
    // The lowest opset that holds `scheme` (13, 19 or 21).
    static int opsetFor(const quant::QuantScheme& scheme);
    // The initializers of `layer` (shape [out, in]) quantized with `scheme` (one unfitReason
    // accepts): codes transposed to [in, out], scales, and zero points except for fp8.
    static std::vector<OnnxTensor> weightLayout(const std::string& layer,
                                                const quant::QuantScheme& scheme,
                                                const std::vector<int64_t>& shape);
    // The initializers of a static activation quantizer named `prefix` ("<layer>.input"):
    // `<prefix>_scale` (fp32) and `<prefix>_zero_point` (its code type, which fixes
    // QuantizeLinear's output type, fp8 included).
    static std::vector<OnnxTensor> activationLayout(const std::string& prefix,
                                                    const quant::QuantSpec& spec);
    // Whether initializers of at least kExternalMinBytes go to kDataFile: the source's weights
    // as fp32 exceed kExternalDataAbove, or QS_ONNX_EXTERNAL_DATA says so.
    static bool usesExternalData(const Checkpoint& source);
    // The rows of the RoPE tables (rope.cos_table, rope.sin_table: [rows, head_dim] fp32).
    static int64_t tableRows(const ModelConfig& config);

private:
    void emit(const std::string& opType, const std::vector<std::string>& inputs,
              const std::string& output, const std::vector<onnx::Attribute>& attributes = {});
    void field(uint32_t number, const std::string& payload);
    void initializer(const std::string& name, onnx::ElemType type, const std::vector<int64_t>& dims,
                     const std::string& raw);
    void floatInitializer(const std::string& name, const at::Tensor& t);
    std::string constInts(const std::vector<int64_t>& values, bool scalar = false);
    std::string constFloat(float value);
    // A tensor as an initializer: the block's own when the block being written has it (norms a
    // SmoothQuant/AWQ transform rescaled), else the source checkpoint's.
    std::string sourceFloat(const std::string& tensorName);
    std::string rmsNorm(const std::string& x, const std::string& weight, const std::string& out);
    std::string rope(const std::string& x, const std::string& out);
    std::string repeatKv(const std::string& x, const std::string& out);
    std::string linear(const LinearLayer& layer, const LayerPlan* plan, const std::string& x);
    std::string weightDequantized(const LayerPlan& plan);
    // An initializer of a layout (weightLayout, activationLayout); qs::Error when `raw` does
    // not fill it exactly.
    void laidInitializer(const OnnxTensor& t, const std::string& raw);
    std::string quantizeDequantize(const std::string& x, const ActivationQuantizer& q,
                                   const std::string& prefix);

    ExportContext m_context;
    ModelConfig m_config;
    ExportFolder m_folder;
    int m_opset = 13;
    int64_t m_tableRows = 0;
    QFile m_spool;
    uint64_t m_graphBytes = 0;
    bool m_external = false;
    QFile m_data;                  // external data (m_external)
    std::set<std::string> m_names; // initializers and node outputs written so far
    std::string m_hidden;          // the residual stream after the last block written
    // writeBlock only: the block's tensors that differ from the source (TensorBlocks.h).
    const std::map<std::string, const at::Tensor*>* m_blockTensors = nullptr;
};

} // namespace qs
