#include "CliCommon.h"

#include "model/QuarkFolder.h"

#include "model/ModelInfo.h"

#include <cstdio>
#include <sstream>

namespace qs::cli {

namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

nlohmann::json nodeJson(const ModuleNode& n) {
    nlohmann::json j{{"name", n.name}, {"kind", n.kind}, {"parameters", n.parameters}};
    if (!n.shape.empty())
        j["shape"] = n.shape;
    if (!n.dtype.empty())
        j["dtype"] = n.dtype;
    if (n.blockIndex >= 0)
        j["block"] = n.blockIndex;
    if (!n.children.empty()) {
        j["children"] = nlohmann::json::array();
        for (const ModuleNode& c : n.children)
            j["children"].push_back(nodeJson(c));
    }
    return j;
}

void printTree(const ModuleNode& n, int depth) {
    std::ostringstream line;
    std::string label = std::string(size_t(depth) * 2, ' ') + n.name;
    line << label;
    if (label.size() < 52)
        line << std::string(52 - label.size(), ' ');
    line << ' ' << n.kind;
    if (!n.shape.empty())
        line << "  " << shapeText(n.shape) << ' ' << n.dtype;
    line << "  " << n.parameters << " params";
    printLine(line.str());
    for (const ModuleNode& c : n.children)
        printTree(c, depth + 1);
}

} // namespace

int runInspect(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument("MODEL_DIR",
                                 "Hugging Face checkpoint folder (or a llama GGUF file).");
    parser.addOption({"json", "Machine-readable output."});
    if (!parseOrHelp(parser, args,
                     "Shows a checkpoint's architecture, config and module tree with shapes and "
                     "parameter counts, from config.json and safetensors headers only."))
        return 0;
    const QString dir = modelFolder(singlePositional(parser, "MODEL_DIR"));
    const ModelInfo info = inspectModel(dir.toStdString());
    // A Quark real-quantized export: its weights are dequantized on load; say so and list the
    // stored scheme per layer.
    const QuarkFolderInfo quark = inspectQuarkFolder(dir.toStdString());
    std::vector<std::string> quarkLayers; // "name: scheme"
    for (const auto& [layer, scheme] : quark.layers)
        quarkLayers.push_back(layer + ": " + scheme);
    if (parser.isSet("json")) {
        nlohmann::json config = nlohmann::json::object();
        for (const auto& kv : info.configSummary)
            config[kv.first] = kv.second;
        printJson({{"directory", info.directory},
                   {"family", info.family},
                   {"architecture", info.architecture},
                   {"config", config},
                   {"checkpoint_files", info.checkpointFiles},
                   {"checkpoint_bytes", info.checkpointBytes},
                   {"total_parameters", info.totalParameters},
                   {"tokenizer", info.tokenizerFiles},
                   {"tree", nodeJson(info.tree)},
                   {"quark_real_quantized",
                    quark.realQuantized
                        ? nlohmann::json{{"pack_method", quark.packMethod}, {"layers", quarkLayers}}
                        : nlohmann::json(nullptr)}});
        return 0;
    }
    printLine("model:        " + info.directory);
    printLine("family:       " + info.family + " (" + info.architecture + ")");
    printLine("parameters:   " + std::to_string(info.totalParameters));
    std::string files;
    for (const std::string& f : info.checkpointFiles)
        files += (files.empty() ? "" : ", ") + f;
    printLine("checkpoint:   " + files + " (" + std::to_string(info.checkpointBytes) + " bytes)");
    printLine("tokenizer:    " + info.tokenizerFiles);
    if (quark.realQuantized) {
        printLine("quantized:    AMD Quark hf_format, real quantized (pack " + quark.packMethod +
                  "), dequantized on load; " + std::to_string(quark.layers.size()) +
                  " quantized layers:");
        for (const std::string& l : quarkLayers)
            printLine("  " + l);
    }
    printLine("config:");
    for (const auto& kv : info.configSummary)
        printLine("  " + kv.first + " = " + kv.second);
    printLine("modules:");
    printTree(info.tree, 1);
    return 0;
}

} // namespace qs::cli
