// Quark's named quantization schemes (quark/torch/quantization/config/template.py,
// QuantizationSchemeCollection, Quark 0.11+) and the legacy names of its older LLM PTQ example
// (w_int4_per_group_sym, ...), resolved to QuantScheme values.
#pragma once

#include "quant/QuantScheme.h"

#include <string>
#include <string_view>
#include <vector>

namespace qs::quant {

struct SchemeName {
    std::string name;
    std::string description;
    bool legacy;         // an older Quark name kept as an alias
    bool takesGroupSize; // legacy per-group names whose group size came from --group_size
};

// Every accepted name, current names first, in a stable order (CLI help, GUI combo box).
const std::vector<SchemeName>& schemeNames();

// Resolve a name. `legacyGroupSize` is the old `--group_size` for legacy per-group names
// (0 = Quark's old default, 128); giving one for any other name is an error. Unknown names throw
// qs::Error("scheme", "name", ...) listing the valid names. The schemes Quark offers but we do
// not implement (amdfp4*, E5M3 scales) are reported as unsupported, not unknown.
QuantScheme resolveScheme(std::string_view name, int legacyGroupSize = 0);

} // namespace qs::quant
