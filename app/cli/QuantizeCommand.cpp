#include "CliCommon.h"
#include "QuantOptions.h"
#include "RankLauncher.h"

#include "recipe/QuarkDatasets.h"
#include "run/Run.h"

#include <cstdio>
#include <numeric>

namespace qs::cli {

int runQuantize(const QStringList& args) {
    QCommandLineParser parser;
    addModelDirOption(parser);
    addQuantOptions(parser);
    addOutputOptions(parser);
    addQuarkEvaluationOptions(parser);
    parser.addOption({"json", "Machine-readable summary."});
    parser.addOption(
        {"resume", "Keep each finished block's state in OUT.resume/ and, when a killed run of the "
                   "same command left state there, continue after its last finished block (the "
                   "same files as an uninterrupted run); state of another run is refused naming "
                   "what differs. Removed once the export is written."});
    addRunOptions(parser);
    addDistributedOptions(parser);
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
    q.resume = parser.isSet("resume");
    if (evaluatesAfterQuantizing(parser)) {
        // Quark's flow: the quantized model's perplexity after the export (here on the local
        // file given; the windows as the recipe says, else the model's context up to 512).
        const std::string data = parser.value("evaluation-dataset").toStdString();
        asUsageError([&] { rejectQuarkDatasetName(data, "command line", "--evaluation_dataset"); });
        q.recipe.evaluation.dataPath = data;
        q.evaluate = true;
        q.fidelity = false;
    }
    if (parser.isSet("gguf-type"))
        q.exportOptions["gguf_type"] = parser.value("gguf-type").toStdString();
    // Launched as one rank of several (--nproc, torchrun, srun): rank 0 alone writes and prints.
    const bool speaks = joinRanksIfLaunched(parser, q) == 0;
    if (speaks)
        saveRecipeIfAsked(parser, q.recipe);
    const RunOutcome out = runJob(q, speaks ? progressFor(parser, "quantize") : nullptr);
    if (!speaks)
        return 0;
    printWarnings("quantize", out.warnings);
    const double seconds = std::accumulate(out.blockSeconds.begin(), out.blockSeconds.end(), 0.0);
    if (parser.isSet("json")) {
        nlohmann::json j = {
            {"out", q.outDir},        {"blocks", out.blockSeconds.size()},
            {"seconds", seconds},     {"block_seconds", out.blockSeconds},
            {"skipped", out.skipped}, {"provenance", provenanceJson(parser, q, out)}};
        if (out.perplexity)
            j["perplexity"] = {{"perplexity", out.perplexity->perplexity},
                               {"mean_nll", out.perplexity->meanNll},
                               {"windows", out.perplexity->windows},
                               {"seq_len", out.perplexity->seqLen},
                               {"tokens", out.perplexity->tokens}};
        j["distributed"] = distributedJson(q);
        printJson(j);
        return 0;
    }
    std::printf("wrote %s (%zu blocks in %.2f s)\n", q.outDir.c_str(), out.blockSeconds.size(),
                seconds);
    if (out.perplexity)
        std::printf("perplexity %.4f (%lld windows of %lld tokens of %s)\n",
                    out.perplexity->perplexity, (long long)out.perplexity->windows,
                    (long long)out.perplexity->seqLen, q.recipe.evaluation.dataPath.c_str());
    for (const std::string& s : out.skipped)
        std::printf("not quantized (unfit): %s\n", s.c_str());
    return 0;
}

} // namespace qs::cli
