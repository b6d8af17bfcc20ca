#include "CliCommon.h"

#include "model/ModelInfo.h"
#include "recipe/QuarkConfig.h"
#include "util/AtomicFile.h"

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

} // namespace

int runRecipe(const QStringList& args) {
    QCommandLineParser parser;
    parser.addOption({"from-quark",
                      "Import the quantization_config of a Quark export's "
                      "config.json (or a bare quantization_config JSON).",
                      "CONFIG"});
    parser.addOption({"to-quark", "Write the Quark quantization_config of a recipe.", "RECIPE"});
    parser.addOption({"model",
                      "Model folder whose layer names make exclusions concrete for vLLM "
                      "(with --to-quark).",
                      "DIR"});
    parser.addOption({"check", "Validate a recipe file and print it normalised.", "RECIPE"});
    parser.addOption({"out", "Output file (default: standard output).", "FILE"});
    if (!parseOrHelp(parser, args,
                     "Converts between Quantscope recipes and Quark quantization_config blocks, "
                     "or validates a recipe."))
        return 0;
    const int modes = int(parser.isSet("from-quark")) + int(parser.isSet("to-quark")) +
                      int(parser.isSet("check"));
    if (modes != 1)
        throw UsageError{"give exactly one of --from-quark, --to-quark or --check"};
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
