#include "export/ExporterRegistry.h"

#include "export/FakeQuantCheckpointWriter.h"
#include "export/GgufCodeBlocks.h"
#include "export/GgufExporter.h"
#include "export/OnnxExporter.h"
#include "export/QuarkHfExporter.h"
#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <set>

namespace qs {

const std::vector<ExportFormat>& ExporterRegistry::formats() {
    return exportFormats();
}

const ExportFormat* ExporterRegistry::find(const std::string& n) {
    return findExportFormat(n);
}

std::string ExporterRegistry::canonical(const std::string& n, const std::string& source,
                                        const std::string& field) {
    if (const ExportFormat* f = find(n))
        return f->name;
    std::string known;
    for (const ExportFormat& f : formats())
        known += (known.empty() ? "" : ", ") + f.name;
    throw Error(source, field, "unknown export format '" + n + "' (known: " + known + ")");
}

std::vector<std::string> ExporterRegistry::problems(const std::string& format, const Recipe& recipe,
                                                    const ModuleNode& tree,
                                                    const std::vector<std::string>& skipped,
                                                    bool loaderLimits, const ModelConfig* model,
                                                    std::optional<GgmlType> ggufType) {
    const ExportFormat* f = find(format);
    if (!f)
        return {"unknown export format '" + format + "'"};
    if (!f->available)
        return {"this build does not write " + f->name + " yet"};
    if (f->name == "fake")
        return {}; // float values
    std::set<std::string> unquantized;
    for (const std::string& s : skipped)
        unquantized.insert(s.substr(0, s.find(':')));
    std::vector<const ModuleNode*> linears;
    tree.collect("linear", linears);
    // Layers grouped by reason, in the model's order: one line per reason, not 64 repeats of
    // the same sentence for a 32-block model.
    std::vector<std::pair<std::string, std::vector<std::string>>> byReason;
    auto add = [&byReason](const std::string& layer, const std::string& reason) {
        for (auto& [r, layers] : byReason)
            if (r == reason) {
                layers.push_back(layer);
                return;
            }
        byReason.push_back({reason, {layer}});
    };
    const bool onnx = f->name == "onnx", gguf = f->name == "gguf", awq = f->name == "awq";
    std::optional<quant::QuantScheme> firstScheme; // awq: the one the global config states
    if (onnx && model)
        if (const std::string r = OnnxExporter::modelReason(*model); !r.empty())
            return {"model: " + r};
    for (const ModuleNode* n : linears) {
        if (n->blockIndex < 0 || n->shape.size() != 2 || unquantized.count(n->name))
            continue;
        const std::string kind = layerKindOf(n->name);
        std::optional<quant::QuantScheme> scheme = recipe.schemeFor(n->name, kind);
        const std::optional<quant::QuantSpec> kv = recipe.kvOutputFor(n->name, kind);
        if (!scheme && !kv)
            continue;
        if (gguf) { // GGUF holds weights only: activation and KV-cache specs are not written
            if (scheme)
                if (const std::string r = ggufUnfitReason(*scheme, n->shape, ggufType); !r.empty())
                    add(n->name, r);
            continue;
        }
        if (scheme && kv)
            scheme->output = kv; // the KV-cache spec replaces the scheme's output spec
        if (awq) {
            if (!scheme) {
                add(n->name, "the awq format holds weights only (no KV-cache scales): use "
                             "--format quark");
                continue;
            }
            if (!firstScheme)
                firstScheme = scheme;
            if (const std::string r =
                    QuarkHfExporter::awqUnfitReason(*scheme, n->shape, loaderLimits, *firstScheme);
                !r.empty())
                add(n->name, r);
            continue;
        }
        const std::string reason =
            onnx     ? (scheme ? OnnxExporter::unfitReason(*scheme)
                               : OnnxExporter::activationReason(*kv, "output"))
            : scheme ? QuarkHfExporter::unfitReason(*scheme, n->shape, loaderLimits)
                     : QuarkHfExporter::outputReason(*kv);
        if (!reason.empty())
            add(n->name, reason);
    }
    constexpr size_t NamesShown = 4; // the rest are counted: the reason says what they share
    std::vector<std::string> out;
    for (const auto& [reason, layers] : byReason) {
        std::string names;
        for (size_t i = 0; i < layers.size() && i < NamesShown; ++i)
            names += (i ? ", " : "") + layers[i];
        if (layers.size() > NamesShown)
            names += " and " + std::to_string(layers.size() - NamesShown) + " more layers";
        out.push_back(names + ": " + reason);
    }
    return out;
}

std::unique_ptr<Exporter> ExporterRegistry::create(const std::string& format,
                                                   const ExportContext& context) {
    const std::string name = canonical(format, "export", "format");
    if (name == "fake")
        return std::make_unique<FakeQuantCheckpointWriter>(context);
    if (name == "quark")
        return std::make_unique<QuarkHfExporter>(context);
    if (name == "awq")
        return std::make_unique<QuarkHfExporter>(context, quant::PackOrder::Reorder, true);
    if (name == "gguf")
        return std::make_unique<GgufExporter>(context, context.ggufType);
    if (name == "onnx")
        return std::make_unique<OnnxExporter>(context);
    throw Error("export", "format", "this build does not write " + name + " yet");
}

} // namespace qs
