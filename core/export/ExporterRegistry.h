#pragma once

#include "export/ExportFormat.h"
#include "export/Exporter.h"
#include "model/ModelConfig.h"
#include "model/ModuleNode.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs {

class ExporterRegistry {
public:
    static const std::vector<ExportFormat>& formats();
    // By name, recipe target or alias (Quark's --model_export hf_format/gguf/onnx); nullptr
    // when unknown.
    static const ExportFormat* find(const std::string& nameOrAlias);
    // Canonical name; throws qs::Error(source, field) naming the formats known.
    static std::string canonical(const std::string& nameOrAlias, const std::string& source,
                                 const std::string& field);

    // Everything that stops `format` from holding the recipe on this model, checked from the
    // headers before any block is read: a format this build does not write, and each quantized
    // linear whose scheme or shape the format cannot hold, one line per reason ("layer, layer
    // and N more layers: reason", with the fix).
    // `skipped` lists layers the planner leaves unquantized ("name: reason"). `loaderLimits`:
    // include layouts the format holds but its consumers cannot load. `model`: the model's
    // config, for formats that write only some families (onnx); nullptr skips those
    // checks (the exporter's constructor repeats them). `ggufType`: GGUF's --gguf-type
    // (nullopt: auto), which decides which quantized layers GGUF holds without re-rounding.
    static std::vector<std::string>
    problems(const std::string& format, const Recipe& recipe, const ModuleNode& tree,
             const std::vector<std::string>& skipped, bool loaderLimits = true,
             const ModelConfig* model = nullptr, std::optional<GgmlType> ggufType = std::nullopt);

    static std::unique_ptr<Exporter> create(const std::string& format,
                                            const ExportContext& context);
};

} // namespace qs
