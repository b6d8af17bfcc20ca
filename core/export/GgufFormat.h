// The GGUF format's one option, gguf_type: the weight type asked (--gguf-type in the CLI, the
// "GGUF weights" box in the GUI). Torch-free.
#pragma once

#include "export/ExportFormat.h"
#include "io/GgmlTypes.h"

#include <optional>
#include <string>
#include <vector>

namespace qs {

// The option's name in ExportOptions.
extern const char* const kGgufTypeOption; // "gguf_type"

// The GGUF weight types the GGUF exporter writes, the default first ("auto": each quantized
// layer in the block type that holds its codes), then the type table's offered types.
const std::vector<std::string>& ggufTypeNames();
// A type ggufTypeNames() offers ("q8_0", ...; case-insensitive); qs::Error naming --gguf-type.
// ggufTypeFromName also takes "auto" (nullopt).
GgmlType ggmlTypeFromName(const std::string& name);
std::optional<GgmlType> ggufTypeFromName(const std::string& name);
// The type a run's options ask GGUF for (nullopt: auto, also when the option is absent).
std::optional<GgmlType> ggufTypeOf(const ExportOptions& options);

} // namespace qs
