#include "export/FormatWriter.h"

#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <set>

namespace qs {

// Defined one per format, beside its exporter.
FormatWriter fakeFormatWriter();  // FakeQuantCheckpointWriter.cpp
FormatWriter quarkFormatWriter(); // QuarkHfExporter.cpp
FormatWriter awqFormatWriter();   // QuarkHfExporter.cpp
FormatWriter ggufFormatWriter();  // GgufFormat.cpp
FormatWriter onnxFormatWriter();  // OnnxFormat.cpp

const std::vector<FormatWriter>& formatWriters() {
    static const std::vector<FormatWriter> all = {fakeFormatWriter(), quarkFormatWriter(),
                                                  awqFormatWriter(), ggufFormatWriter(),
                                                  onnxFormatWriter()};
    return all;
}

const std::vector<ExportFormat>& exportFormats() {
    static const std::vector<ExportFormat> all = [] {
        std::vector<ExportFormat> formats;
        for (const FormatWriter& w : formatWriters())
            formats.push_back(w.format);
        return formats;
    }();
    return all;
}

const FormatWriter& formatWriter(const std::string& n) {
    const std::string name = canonicalExportFormat(n, "export", "format");
    for (const FormatWriter& w : formatWriters())
        if (w.format.name == name)
            return w;
    throw Error("export", "format", "unknown export format '" + n + "'"); // not reached
}

std::vector<std::string> exportProblems(const std::string& format, const ExportCheck& check) {
    const ExportFormat* f = findExportFormat(format);
    if (!f)
        return {"unknown export format '" + format + "'"};
    if (!f->available)
        return {"this build does not write " + f->name + " yet"};
    const FormatWriter& w = formatWriter(f->name);
    return w.problems ? w.problems(check) : std::vector<std::string>{};
}

std::unique_ptr<Exporter> createExporter(const std::string& format, const ExportContext& context) {
    const FormatWriter& w = formatWriter(format);
    if (!w.format.available || !w.create)
        throw Error("export", "format", "this build does not write " + w.format.name + " yet");
    return w.create(context);
}

std::vector<std::string> layerProblems(const ExportCheck& check, const LayerReason& reason) {
    std::set<std::string> unquantized;
    for (const std::string& s : check.skipped)
        unquantized.insert(s.substr(0, s.find(':')));
    std::vector<const ModuleNode*> linears;
    check.tree.collect("linear", linears);
    std::vector<std::pair<std::string, std::vector<std::string>>> byReason;
    for (const ModuleNode* n : linears) {
        if (n->blockIndex < 0 || n->shape.size() != 2 || unquantized.count(n->name))
            continue;
        const std::string kind = layerKindOf(n->name);
        const std::optional<quant::QuantScheme> scheme = check.recipe.schemeFor(n->name, kind);
        const std::optional<quant::QuantSpec> kv = check.recipe.kvOutputFor(n->name, kind);
        if (!scheme && !kv)
            continue;
        const std::string r = reason(*n, scheme, kv);
        if (r.empty())
            continue;
        auto it = byReason.begin();
        while (it != byReason.end() && it->first != r)
            ++it;
        if (it == byReason.end())
            byReason.push_back({r, {n->name}});
        else
            it->second.push_back(n->name);
    }
    constexpr size_t NamesShown = 4; // the rest are counted: the reason says what they share
    std::vector<std::string> out;
    for (const auto& [r, layers] : byReason) {
        std::string names;
        for (size_t i = 0; i < layers.size() && i < NamesShown; ++i)
            names += (i ? ", " : "") + layers[i];
        if (layers.size() > NamesShown)
            names += " and " + std::to_string(layers.size() - NamesShown) + " more layers";
        out.push_back(names + ": " + r);
    }
    return out;
}

} // namespace qs
