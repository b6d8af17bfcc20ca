#include "CliCommon.h"

#include "export/ExportSize.h"
#include "export/GgufFormat.h"
#include "model/ModelInfo.h"
#include "recipe/QuarkConfig.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include <cstdio>

namespace qs::cli {

namespace {

std::vector<std::string> linearNames(const std::string& modelDir) {
    std::vector<const ModuleNode*> nodes;
    const ModelInfo info = inspectModel(modelDir);
    info.tree.collect("linear", nodes);
    info.tree.collect("head", nodes);
    std::vector<std::string> names;
    for (const ModuleNode* n : nodes)
        names.push_back(n->name);
    return names;
}

std::string fixed(double v, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

std::string bits(const std::optional<double>& v) {
    return v ? fixed(*v, 4) : "-";
}

// The size report as a small table per format (bytes by role, files, bits per weight).
std::string sizeText(const ExportSizeReport& r) {
    std::string t = "model: " + r.model + " (" + std::to_string(r.parameters) + " parameters; " +
                    std::to_string(r.linearWeights) + " weights in " +
                    std::to_string(r.linears.size()) + " block linears, " +
                    std::to_string(r.quantizedWeights) + " of them quantized)\n";
    t += "scheme bits (what the schemes need, any format): " +
         bits(r.schemeBitsPerQuantizedWeight()) + " per quantized weight, " +
         fixed(r.schemeBitsPerLinearWeight(), 4) + " per linear weight\n";
    for (const FormatSize& f : r.formats) {
        t += "\n" + f.format + (f.holds() ? "\n" : ": cannot hold this recipe\n");
        for (const std::string& p : f.problems)
            t += "  " + p + "\n";
        if (!f.holds())
            continue;
        for (const std::string& w : f.warnings)
            t += "  warning (written with --allow-unloadable, refused by its loaders): " + w + "\n";
        char row[160];
        for (const auto& [role, bytes] : f.bytesByRole) {
            std::snprintf(row, sizeof row, "  %-26s %16llu bytes\n", storedRoleName(role).c_str(),
                          static_cast<unsigned long long>(bytes));
            t += row;
        }
        std::snprintf(row, sizeof row, "  %-26s %16llu bytes\n", "tensor data",
                      static_cast<unsigned long long>(f.tensorBytes));
        t += row;
        for (const auto& [name, bytes] : f.files) {
            std::snprintf(row, sizeof row, "  %-26s %16llu bytes%s\n", ("file " + name).c_str(),
                          static_cast<unsigned long long>(bytes),
                          f.filesExact ? " (exact)" : " (at least)");
            t += row;
        }
        if (!f.filesNote.empty())
            t += "  (" + f.filesNote + ")\n";
        t += "  bits per linear weight " + bits(r.bitsPerLinearWeight(f.format)) +
             ", per quantized weight " + bits(r.bitsPerQuantizedWeight(f.format)) +
             ", per parameter " + bits(r.bitsPerParameter(f.format)) + "\n";
    }
    for (const std::string& n : r.notes)
        t += "\nnote: " + n + "\n";
    t += "\neffective_bits (Quark hf_format, over every block linear's weight): " +
         bits(r.effectiveBits());
    return t;
}

int runSize(const QCommandLineParser& parser) {
    if (!parser.isSet("model"))
        throw UsageError{"--size needs --model DIR"};
    const std::string path = parser.value("size").toStdString();
    const Recipe recipe = Recipe::load(path);
    std::vector<std::string> formats;
    for (const QString& value : parser.values("format"))
        for (const QString& f : value.split(',', Qt::SkipEmptyParts))
            formats.push_back(f.trimmed().toStdString());
    if (formats.empty())
        formats = sizedFormats();
    ExportOptions options;
    if (parser.isSet("gguf-type"))
        options[kGgufTypeOption] = parser.value("gguf-type").toStdString();
    ExportSizeReport report;
    try {
        report =
            exportSize(modelFolder(parser.value("model")).toStdString(), recipe, formats, options);
    } catch (const Error& e) {
        // The engine names the recipe "recipe"; here it is a file the user can open.
        if (e.source() != "recipe")
            throw;
        throw Error(path, e.field(), e.reason());
    }
    if (parser.isSet("json"))
        printJson(exportSizeJson(report));
    else
        printLine(sizeText(report));
    return 0;
}

} // namespace

int runRecipe(const QStringList& args) {
    if (args.contains("--auto"))
        return runRecipeSearch(args);
    QCommandLineParser parser;
    parser.addOption({"from-quark",
                      "Import the quantization_config of a Quark export's "
                      "config.json (or a bare quantization_config JSON).",
                      "CONFIG"});
    parser.addOption({"to-quark", "Write the Quark quantization_config of a recipe.", "RECIPE"});
    parser.addOption({"model",
                      "Model folder whose layer names make exclusions concrete for vLLM "
                      "(with --to-quark), or whose size --size computes.",
                      "DIR"});
    parser.addOption({"check", "Validate a recipe file and print it normalised.", "RECIPE"});
    parser.addOption(
        {"size",
         "Size of the recipe on --model as each format stores it (headers only, nothing "
         "quantized): bytes per role (codes, scales, zero points, block scales, float weights, "
         "activation scales), the files' sizes and bits per weight; effective_bits is the bits "
         "per block linear weight of the Quark hf_format export.",
         "RECIPE"});
    parser.addOption({"format",
                      "With --size: quark, gguf or onnx (repeatable or comma-separated; "
                      "default all three).",
                      "FORMAT"});
    parser.addOption({"gguf-type",
                      "With --size: the GGUF weight type (as quantize's --gguf-type; default "
                      "auto).",
                      "TYPE"});
    parser.addOption({"json", "With --size: machine-readable report."});
    parser.addOption({"out", "Output file (default: standard output).", "FILE"});
    parser.addOption({"auto",
                      "Design a recipe under a size or KL budget (see recipe --auto --help)."});
    if (!parseOrHelp(parser, args,
                     "Converts between Quantscope recipes and Quark quantization_config blocks, "
                     "validates a recipe, or computes its size on a model."))
        return 0;
    const int modes = int(parser.isSet("from-quark")) + int(parser.isSet("to-quark")) +
                      int(parser.isSet("check")) + int(parser.isSet("size"));
    if (modes != 1)
        throw UsageError{"give exactly one of --from-quark, --to-quark, --check or --size"};
    if (parser.isSet("size"))
        return runSize(parser);
    std::string text;
    if (parser.isSet("from-quark")) {
        text = recipeFromQuarkConfigFile(parser.value("from-quark").toStdString())
                   .toOrderedJson()
                   .dump(2);
    } else if (parser.isSet("check")) {
        text = Recipe::load(parser.value("check").toStdString()).toOrderedJson().dump(2);
    } else {
        Recipe recipe = Recipe::load(parser.value("to-quark").toStdString());
        // Quantscope never quantizes the LM head (as Quark's LLM examples exclude it by
        // default); say so explicitly, or Quark would apply the global scheme to it.
        if (!recipe.isExcluded("lm_head"))
            recipe.exclude.push_back("lm_head");
        const std::vector<std::string> names =
            parser.isSet("model") ? linearNames(modelFolder(parser.value("model")).toStdString())
                                  : std::vector<std::string>{};
        text = quarkConfigFromRecipe(recipe, names).dump(2);
    }
    if (parser.isSet("out"))
        writeFileAtomically(parser.value("out").toStdString(), text + "\n");
    else
        printLine(text);
    return 0;
}

} // namespace qs::cli
