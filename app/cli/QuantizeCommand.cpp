#include "CliCommon.h"
#include "QuantOptions.h"

#include "run/Run.h"

#include <cstdio>
#include <numeric>

namespace qs::cli {

int runQuantize(const QStringList& args) {
    QCommandLineParser parser;
    addModelDirOption(parser);
    addQuantOptions(parser);
    addOutputOptions(parser);
    parser.addOption({"json", "Machine-readable summary."});
    addRunOptions(parser);
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Quantizes a model block by block and writes it in each --format (default: a "
                     "fake-quantized Hugging Face checkpoint) plus the recipe used "
                     "(quantscope_recipe.json); replaying that recipe with --recipe gives "
                     "bit-identical files on CPU. A format that cannot hold a layer's scheme is "
                     "refused before any work, naming the layer.",
                     schemeHelp()))
        return 0;
    const QString dir = modelDirFromOptions(parser);
    const std::string outDir = outputDirFromOptions(parser);
    const std::vector<std::string> formats = exportFormatsFromOptions(parser);
    applyThreadsOption(parser);
    RunRequest q = requestFromOptions(parser, dir);
    q.outDir = outDir;
    q.exportFormats = formats;
    q.allowUnloadable = parser.isSet("allow-unloadable");
    if (parser.isSet("gguf-type"))
        q.exportOptions["gguf_type"] = parser.value("gguf-type").toStdString();
    saveRecipeIfAsked(parser, q.recipe);
    const RunOutcome out = runJob(q, progressFor(parser, "quantize"));
    printWarnings("quantize", out.warnings);
    const double seconds = std::accumulate(out.blockSeconds.begin(), out.blockSeconds.end(), 0.0);
    if (parser.isSet("json")) {
        printJson({{"out", q.outDir},
                   {"blocks", out.blockSeconds.size()},
                   {"seconds", seconds},
                   {"block_seconds", out.blockSeconds},
                   {"skipped", out.skipped},
                   {"provenance", provenanceJson(parser, q, out)}});
        return 0;
    }
    std::printf("wrote %s (%zu blocks in %.2f s)\n", q.outDir.c_str(), out.blockSeconds.size(),
                seconds);
    for (const std::string& s : out.skipped)
        std::printf("not quantized (unfit): %s\n", s.c_str());
    return 0;
}

} // namespace qs::cli
