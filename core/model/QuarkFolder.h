#pragma once

#include "io/Checkpoint.h"
#include "quant/StoredQuantization.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// Opening AMD Quark "hf_format" exports with real quantized weights (Quark's own and
// Quantscope's, layout in export/QuarkHfExporter.h). The quantized linears are dequantized on
// load with the same arithmetic as the fake quantizer (quant::dequantize), so the opened model
// computes exactly what the fake-quantized model it came from computes.
//
// The dequantized float tensors go to a cache folder (a safetensors file written tensor by
// tensor, one tensor in memory, temp name renamed into place) keyed by the export's path, size
// and modification time; the model then maps that file like any checkpoint. Activation scales
// (input_scale, output_scale) are applied by a run that evaluates or analyses the export as it
// is (readStoredQuantization; prepareRun imports the quantization_config for such a run), so its
// perplexity is that of the fake-quantized model it came from, activations included.
struct QuarkFolderInfo {
    bool realQuantized = false; // config.json has a Quark quantization_config, real_quantized
    std::string packMethod;     // "reorder" | "order"
    // Quantized linears as stored: full name and the label of the scheme its config gives it.
    std::vector<std::pair<std::string, std::string>> layers;
};

// Reads config.json of `directory` (quick: no tensor is read). A Quark fake_quantized export
// (float weights) reports realQuantized = false: it opens as it is.
QuarkFolderInfo inspectQuarkFolder(const std::string& directory);

// The checkpoint a model computes with: `directory` itself, or for a real-quantized Quark
// export its dequantized cache (written on first use). Errors name the file, tensor and reason.
std::unique_ptr<Checkpoint> openCheckpointForCompute(const std::string& directory);

// What a real-quantized export stores besides its weights' codes: every quantized linear (its
// weight dequantizes on load) with its static input and output parameters (`input_scale`,
// `input_zero_point`, `output_scale`, `output_zero_point`). Empty for any other folder.
quant::StoredQuantization readStoredQuantization(const std::string& directory);

// Writes the dequantized checkpoint of a Quark real-quantized export to `outFile`.
void writeDequantizedQuark(const std::string& directory, const std::string& outFile);

} // namespace qs
