// The export formats as every reader names them, without Torch: the CLI, the exporter registry
// (core/export/ExporterRegistry.h) and the GUI's export dialog read this one table.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace qs {

// A format's own options by name ("gguf_type" -> "q4_k"): data the format declares and checks,
// carried through the run layer without it knowing what they mean.
using ExportOptions = std::map<std::string, std::string>;

// `name` is what the CLI (--format), the GUI and the registry use; `recipeTarget` what a recipe's
// export_targets records.
struct ExportFormat {
    std::string name;         // "fake", "quark", "gguf", "onnx"
    std::string recipeTarget; // "hf_fake", "quark", "gguf", "onnx"
    std::vector<std::string> aliases;
    std::string description;
    bool available = false; // written by this build
};

const std::vector<ExportFormat>& exportFormats();
// By name, recipe target or alias (Quark's --model_export hf_format/gguf/onnx); nullptr when
// unknown.
const ExportFormat* findExportFormat(const std::string& nameOrAlias);
// The GGUF weight types the GGUF exporter writes (--gguf-type), the default first ("auto": each
// quantized layer in the block type that holds its codes).
const std::vector<std::string>& ggufTypeNames();

} // namespace qs
