#pragma once

#include "export/ExportFolder.h"
#include "export/Exporter.h"
#include "export/StoredTensor.h"
#include "io/SafetensorsFile.h"
#include "quant/QuantScheme.h"

#include <QFile>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// One tensor the Quark export writes for a linear: name suffix, dtype, shape and role. The
// exporter writes by this table (QuarkHfExporter::weightLayout, activationLayout: the bytes it
// produces must fill it exactly) and the size accounting (ExportSize.h) reads it.
struct QuarkTensor {
    std::string suffix; // after the layer's name: ".weight", ".weight_scale", ".input_scale", ...
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    StoredRole role = StoredRole::Codes;
    uint64_t bytes() const;
};

// AMD Quark's "hf_format" with real quantized weights (what transformers + amd-quark and vLLM
// load; layout in ../shared/docs/formats.md, checked against Quark 0.13's own exports):
//   int4/uint4 per group: weight int32 [in, ceil(out/8)] (transposed, 8 codes per word in the
//     pack order), weight_scale [in/g, out], weight_zero_point int32 [in/g, ceil(out/8)];
//   int4/uint4 per channel / per tensor: weight int32 [out, ceil(in/8)], scale [out] / [],
//     zero point packed [ceil(out/8)] / int32 [];
//   int8/uint8 per tensor/channel: weight I8/U8 [out, in], scale, zero point int32;
//   fp8 e4m3/e5m2 per tensor/channel: weight F8_E4M3/F8_E5M2 [out, in], scale (no zero point);
//   mxfp4 / mxfp6_e3m2 / mxfp6_e2m3 (blocks of 32 along the inputs): weight U8 [out, in/2]
//     (FP4 E2M1 codes, low nibble = even input) or [out, in/4*3] (FP6 codes v0..v3 as the
//     little-endian 24-bit word v0 | v1 << 6 | v2 << 12 | v3 << 18), weight_scale U8 E8M0
//     [out, ceil(in/32)]; MX inputs are dynamic (config block only);
//   static inputs: input_scale (+ input_zero_point for integers); KV cache: output_scale.
// With `awq` (Quark's custom_mode "awq", for AutoAWQ's GEMM kernels and vLLM): int4/uint4 per
// group weights only, the same tensors named qweight / scales / qzeros, and an AwqConfig
// quantization_config (bits, group_size, zero_point, modules_to_not_convert, version "gemm").
// Unquantized tensors are copied byte for byte; config.json gets the recipe's
// quantization_config (QuarkConfig.h) with the export block. Tensors are spooled to a data file
// block by block (one block in memory) and assembled into model.safetensors at commit.
class QuarkHfExporter : public Exporter {
public:
    explicit QuarkHfExporter(const ExportContext& context,
                             quant::PackOrder order = quant::PackOrder::Reorder, bool awq = false);
    ~QuarkHfExporter() override;

    std::string format() const override { return m_awq ? "awq" : "quark"; }
    void writeLeading() override;
    void writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) override;
    void commit(const std::string& recipeJson) override;
    // writeLinear packs the codes through packInt4 / .to(kChar|kByte), whatever their dtype.
    bool readsOnlyCodes() const override { return true; }

    // Why a linear of `shape` [out, in] with `scheme` cannot be written, with what works
    // instead; empty when it can. `loaderLimits`: also refuse layouts Quark writes but its
    // consumers cannot load (transformers + amd-quark allocate floor(n/8) packed int4 columns
    // where the layout needs ceil(n/8), and floor(in/32) MX scales where it needs ceil(in/32)).
    static std::string unfitReason(const quant::QuantScheme& scheme,
                                   const std::vector<int64_t>& shape, bool loaderLimits = true);
    // Why an output (KV-cache) spec cannot be written; empty when it can.
    static std::string outputReason(const quant::QuantSpec& output);
    // Why the awq layout cannot hold a linear with `scheme` (weight-only int4/uint4 per group);
    // empty when it can. `first`: the scheme of the first quantized linear, whose bits, group
    // size and zero point the (global) AwqConfig states.
    static std::string awqUnfitReason(const quant::QuantScheme& scheme,
                                      const std::vector<int64_t>& shape, bool loaderLimits,
                                      const quant::QuantScheme& first);

    // The tensors that replace `<layer>.weight` of a linear of `shape` [out, in] quantized with
    // `scheme` (one unfitReason accepts), in the order written; `awq` gives AWQ_SAVE_MAP's names.
    static std::vector<QuarkTensor> weightLayout(const quant::QuantScheme& scheme,
                                                 const std::vector<int64_t>& shape,
                                                 bool awq = false);
    // The tensors of a static activation quantizer with `spec` ("input" or "output" `role`):
    // `<layer>.<role>_scale`, and for integer types `<role>_zero_point`; none when dynamic.
    static std::vector<QuarkTensor> activationLayout(const std::string& role,
                                                     const quant::QuantSpec& spec);
    // The file the tensors go to, its __metadata__, and its order: names sorted (as Quark's
    // safetensors files).
    static constexpr const char* kFileName = "model.safetensors";
    static const std::map<std::string, std::string>& fileMetadata();
    static void sortLayout(std::vector<TensorInfo>& layout);

private:
    void spool(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
               const void* bytes, uint64_t size);
    void spoolTensor(const std::string& name, const at::Tensor& t);
    // `t`'s bytes as the layout entry `laid` of `layer` (its name, dtype and shape); qs::Error
    // when they do not fill it exactly.
    void spoolLaid(const std::string& layer, const QuarkTensor& laid, const at::Tensor& t);
    void copyRaw(const std::string& name);
    void writeUntil(int blockLimit);
    void writeLinear(const LayerPlan& plan);
    void writeActivationScales(const LayerPlan& plan);
    // One expert linear cut out of a fused tensor, under its own name: codes and scales, or its
    // float weight in `floatType`; its bias; its activation scales.
    void writeExpertLinear(const LinearLayer& layer, const LayerPlan& plan,
                           at::ScalarType floatType);

    const Checkpoint& m_source;
    ExportContext m_context;
    quant::PackOrder m_order;
    bool m_awq;
    std::optional<quant::QuantScheme> m_firstWritten; // awq: the scheme its config states
    ExportFolder m_folder;
    std::vector<std::string> m_names; // source tensors in block order
    std::vector<int> m_blockOf;
    size_t m_next = 0;
    QFile m_spool;
    std::vector<TensorInfo> m_written; // begin/end: offsets in the spool file
    // Block linears written in float (excluded by the recipe or left unquantized as unfit):
    // each must be in `exclude`, or Quark's loaders would look for their scales
    std::vector<std::string> m_floatLinears;
};

} // namespace qs
