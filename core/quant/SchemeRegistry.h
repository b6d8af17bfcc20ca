// Quark's named quantization schemes (quark/torch/quantization/config/template.py,
// QuantizationSchemeCollection, Quark 0.11+) and the legacy names of its older LLM PTQ example
// (w_int4_per_group_sym, ...), resolved to QuantScheme values.
#pragma once

#include "quant/QuantScheme.h"

#include <string>
#include <string_view>
#include <vector>

namespace qs::quant {

// One accepted name: the one table every scheme chooser reads (CLI help and errors, the recipe
// panel, the override dialog), with its one-line description.
struct SchemeName {
    std::string name;
    std::string description; // one line, for help texts, tooltips and status tips
    bool legacy;             // an older Quark name kept as an alias
    // Quark's per-group names (w_uint4_per_group_asym, ...): the group size is a parameter
    // (Quark's --group_size, the recipe's "group_size"), kDefaultGroupSize when not given.
    bool takesGroupSize;
    // The weight's group size as the name resolves without one: fixed by the name (int4_wo_32:
    // 32, MX blocks: 32) or kDefaultGroupSize for the names that take one; 0 when the weight is
    // not quantized per group.
    int groupSize;
};

// Quark's default --group_size for its per-group names.
constexpr int kDefaultGroupSize = 128;

// Every accepted name, current names first, in a stable order (CLI help, GUI combo box).
const std::vector<SchemeName>& schemeNames();
// The entry of `name`; nullptr when unknown.
const SchemeName* findSchemeName(std::string_view name);

// Resolve a name. `groupSize` is Quark's `--group_size` for the per-group names that take one
// (0 = kDefaultGroupSize); for any other name it must be 0 or the group size the name fixes, else
// qs::Error("scheme", "group_size", ...) says why. Unknown names throw
// qs::Error("scheme", "name", ...) listing the valid names. The schemes Quark offers but we do
// not implement (amdfp4*, E5M3 scales) are reported as unsupported, not unknown.
QuantScheme resolveScheme(std::string_view name, int groupSize = 0);

} // namespace qs::quant
