// One tensor as an export format stores it, for size accounting (ExportSize.h). Each exporter
// describes the tensors it writes for a quantized linear with a layout function (its one table,
// which the exporter itself writes by: QuarkHfExporter::weightLayout, OnnxExporter::weightLayout,
// ggufStoredType); the size accounting reads the same functions. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qs {

// What a stored tensor's bytes are, so bits per weight can say what they count.
enum class StoredRole : uint8_t {
    Codes,           // a quantized weight's codes (packed as the format packs them)
    Scale,           // a quantized weight's scales (per tensor, channel or free-sized group)
    ZeroPoint,       // a quantized weight's zero points
    BlockScale,      // the shared scales of a fixed-block type (MX's E8M0, NVFP4's E4M3 bytes)
    Blocks,          // codes with their block scales interleaved (ggml's Q4_0, Q4_1, Q8_0, ...)
    FloatWeight,     // a block linear's weight stored in float (excluded, unfit, or a float type)
    ActivationScale, // a static input or output (KV-cache) quantizer's scale or zero point
    Other,           // every other model tensor: embeddings, norms, biases, the LM head
    Graph,           // not a model parameter: ONNX's RoPE tables
};

// "codes", "scale", "zero_point", "block_scale", "blocks", "float_weight", "activation_scale",
// "other", "graph": the JSON keys of the size report.
std::string storedRoleName(StoredRole role);
// Whether the role is part of a linear's weight as stored (codes, scales, zero points, block
// scales, ggml blocks, or the float weight): what bits per weight count.
bool isWeightRole(StoredRole role);

struct StoredTensor {
    std::string name;           // as the file names it
    std::string dtype;          // the format's type name: "I32", "F8_E4M3", "Q4_0", "INT4"
    std::vector<int64_t> shape; // as the file records it
    uint64_t bytes = 0;         // bytes of data in the file (padding not included)
    StoredRole role = StoredRole::Other;
    std::string layer; // the block linear the tensor belongs to; empty for other tensors
};

} // namespace qs
