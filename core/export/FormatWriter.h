// The engine side of an export format: what it cannot hold, its exporter and, where Quantscope
// reads the format back, its reader. One FormatWriter per format, defined in the format's own
// file beside its exporter, and one row per format in the table (FormatWriters.cpp): adding a
// format is its file plus that row. The Torch-free part of the record (names, options) is
// ExportFormat.h, which the GUI reads.
//
// Exporters are core classes behind this table, not plugins: they read LayerPlan and Torch
// tensors, which are engine internals with no stable ABI; a plugin interface would freeze them.
#pragma once

#include "export/ExportFormat.h"
#include "export/Exporter.h"
#include "model/ModelConfig.h"
#include "model/ModuleNode.h"
#include "quant/QuantScheme.h"
#include "recipe/Recipe.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// What a format's problems check reads, from the headers alone (before any block is read).
struct ExportCheck {
    const Recipe& recipe;
    const ModuleNode& tree;
    // Layers the planner leaves unquantized ("name: reason").
    const std::vector<std::string>& skipped;
    // Include layouts the format holds but its consumers cannot load.
    bool loaderLimits = true;
    // The model's config, for formats that write only some families; nullptr skips those
    // checks (the exporter's constructor repeats them).
    const ModelConfig* model = nullptr;
    // The run's format options (ExportFormat.h); each format reads its own.
    const ExportOptions& options;
};

struct FormatWriter {
    ExportFormat format;
    // Everything that stops the format from holding the recipe on this model, one line per
    // reason ("layer, layer and N more layers: reason", with the fix); empty when it holds it.
    std::function<std::vector<std::string>(const ExportCheck&)> problems;
    std::function<std::unique_ptr<Exporter>(const ExportContext&)> create;
    // The folder Quantscope opens as a model for an export written to `exportDir`; nullptr
    // when Quantscope does not read the format back.
    std::string (*reader)(const std::string& exportDir) = nullptr;
};

// The table, one row per format.
const std::vector<FormatWriter>& formatWriters();
// By name, recipe target or alias; qs::Error naming the formats known.
const FormatWriter& formatWriter(const std::string& nameOrAlias);

// The problems of `format` (by name or alias): an unknown format or one this build does not
// write is itself the problem.
std::vector<std::string> exportProblems(const std::string& format, const ExportCheck& check);
// The exporter of `format`, or qs::Error when this build does not write it.
std::unique_ptr<Exporter> createExporter(const std::string& format, const ExportContext& context);

// Why one quantized linear cannot be held (empty: it can); `kv` is the KV-cache spec of its
// output, when the recipe has one for it.
using LayerReason = std::function<std::string(const ModuleNode& layer,
                                              const std::optional<quant::QuantScheme>& scheme,
                                              const std::optional<quant::QuantSpec>& kv)>;
// Runs `reason` over every block linear the recipe quantizes (a scheme or a KV-cache spec; not
// the layers the planner skips) and groups the layers by reason, in the model's order: one line
// per reason, not 64 repeats of the same sentence for a 32-block model.
std::vector<std::string> layerProblems(const ExportCheck& check, const LayerReason& reason);

} // namespace qs
