// Size accounting of a recipe on a model: one definition, read by the CLI (`quantscope-cli
// recipe --size`), the GUI and the recipe search. Nothing is quantized and no weight is read:
// the model's tensors come from config.json and the safetensors headers, each linear's scheme
// from the planner a run uses (LayerPlanner: the recipe's resolution, unfit_policy), and what
// each format stores from its exporter's own layout table (QuarkHfExporter::weightLayout,
// ggufStoredType, OnnxExporter::weightLayout; StoredTensor.h), which the exporters write by.
//
// Definitions (the JSON keys of exportSizeJson):
//   linear weights     the elements of every block linear's weight (the layers a recipe can
//                      quantize; the LM head, which the engine keeps in float, is not one).
//   quantized weights  those of the block linears the planner quantizes.
//   parameters         the elements of every tensor of the source checkpoint.
//   bits_per_linear_weight     8 x (bytes of every block linear's weight as the format stores
//                      it: codes, scales, zero points, block scales, or the float weight of an
//                      unquantized one) / linear weights. Activation and KV-cache scales are not
//                      weights and are not counted.
//   bits_per_quantized_weight  the same over the quantized block linears only.
//   bits_per_parameter         8 x (bytes of every model tensor the format stores, activation
//                      scales included, ONNX's RoPE tables not) / parameters.
//   effective_bits     bits_per_linear_weight of the Quark hf_format export ("quark"); null
//                      when that format cannot hold the recipe.
//   scheme_bits        the same two ratios for what the schemes themselves need, whatever the
//                      format (SchemeBits).
// Header Torch-free (the GUI reads it).
#pragma once

#include "export/ExportFormat.h"
#include "export/StoredTensor.h"
#include "quant/QuantScheme.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qs {

struct Recipe;

// What a linear's scheme itself needs, in bits, in the densest storage its definition allows:
// codes at the type's width (TypeTraits::bits); one scale per tensor, channel or group at its
// scale type's width (32: the engine's fp32 scales; 8: E8M0 or E4M3); zero points at the code
// width for asymmetric integer schemes; the shared scales of fixed-block types (MX, NVFP4,
// BFP16), one per block along the inputs, the last block padded, at TypeTraits::bitsPerElement
// minus bits per element of a block; NVFP4's fp32 tensor scale; a progressive pre-stage's
// scales. Formats store more (Quark's int32 zero points, ggml's f16 block scales).
struct SchemeBits {
    uint64_t codes = 0, scales = 0, zeroPoints = 0, blockScales = 0;
    uint64_t total() const { return codes + scales + zeroPoints + blockScales; }
};
SchemeBits schemeBits(const quant::QuantScheme& scheme, int64_t out, int64_t in);

// One block linear under the recipe.
struct LinearSize {
    std::string name;
    std::vector<int64_t> shape;               // [out, in]
    std::string sourceDtype;                  // of the weight in the checkpoint
    std::optional<quant::QuantScheme> scheme; // nullopt: unquantized
    std::string note;                         // why unquantized ("excluded", the unfit reason)
    SchemeBits bits; // of the scheme; unquantized: the source weight's bits (as codes)
    std::map<std::string, uint64_t> storedBytes; // format -> weight bytes as the format stores it
    int64_t elements() const { return shape.at(0) * shape.at(1); }
};

// What one format writes for the recipe.
struct FormatSize {
    std::string format;                // "quark", "gguf", "onnx"
    std::vector<std::string> problems; // why it cannot hold the recipe; then nothing below is set
    // Layouts the format holds but its consumers refuse (what --allow-unloadable writes).
    std::vector<std::string> warnings;
    std::vector<StoredTensor> tensors; // every tensor the format writes, as it names them
    std::map<StoredRole, uint64_t> bytesByRole;
    uint64_t tensorBytes = 0;          // data of every tensor
    uint64_t modelBytes = 0;           // tensorBytes less the Graph role
    uint64_t linearWeightBytes = 0;    // weight roles of every block linear
    uint64_t quantizedWeightBytes = 0; // weight roles of the quantized block linears
    // The files the format's model lives in, with their predicted sizes. `filesExact`: every
    // byte predicted; otherwise `filesNote` says what is not and how far it can be off.
    std::vector<std::pair<std::string, uint64_t>> files;
    bool filesExact = true;
    std::string filesNote;
    bool holds() const { return problems.empty(); }
};

struct ExportSizeReport {
    std::string model;
    int64_t parameters = 0;
    int64_t linearWeights = 0;
    int64_t quantizedWeights = 0;
    std::vector<LinearSize> linears;
    std::vector<FormatSize> formats;
    std::vector<std::string> notes; // what the accounting does not model for this recipe

    const FormatSize* format(const std::string& name) const; // nullptr when not sized
    // 8 x bytes / weights; nullopt when there are no such weights or the format cannot hold it.
    std::optional<double> bitsPerLinearWeight(const std::string& format) const;
    std::optional<double> bitsPerQuantizedWeight(const std::string& format) const;
    std::optional<double> bitsPerParameter(const std::string& format) const;
    std::optional<double> effectiveBits() const { return bitsPerLinearWeight("quark"); }
    double schemeBitsPerLinearWeight() const;
    std::optional<double> schemeBitsPerQuantizedWeight() const;
};

// The formats sized by default, in this order: quark, gguf, onnx.
const std::vector<std::string>& sizedFormats();

// Plans `recipe` on the checkpoint in `modelDir` (headers only) and lays out what each of
// `formats` (names or aliases: hf_format = quark) writes, with the formats' `options`
// (gguf_type). A format that cannot hold the recipe gets its problems instead of sizes. Throws
// qs::Error (file, field, reason) when the recipe cannot run on the model (an invalid recipe, a
// layer that does not fit its scheme under unfit_policy "error", an unknown format or option).
ExportSizeReport exportSize(const std::string& modelDir, const Recipe& recipe,
                            const std::vector<std::string>& formats = sizedFormats(),
                            const ExportOptions& options = {});

// The report as JSON (keys as defined above; per format its files, bytes by role and bits; per
// linear its scheme, scheme bits and stored bytes per format).
nlohmann::ordered_json exportSizeJson(const ExportSizeReport& report);

} // namespace qs
