#include "CliCommon.h"

#include "QuantOptions.h"
#include "RankLauncher.h"
#include "run/Run.h"

#include <chrono>
#include <cstdio>

namespace qs::cli {

int runEval(const QStringList& args) {
    QCommandLineParser parser;
    addModelDirOption(parser);
    parser.addOption({{"data", "evaluation-dataset", "evaluation_dataset"},
                      "UTF-8 text file to evaluate on (Quark's --evaluation_dataset).",
                      "TEXT"});
    addEvalWindowOptions(parser);
    parser.addOption({"json", "Machine-readable output."});
    addQuantOptions(parser);
    addRunOptions(parser);
    addDistributedOptions(parser);
    parser.addOption({"no-fidelity",
                      "Skip the comparison with the full-precision model (KL divergence, Δp, "
                      "top-1 agreement) that an evaluation of a quantized model prints."});
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Perplexity of a model on a text: tokenized once with BOS, cut into "
                     "non-overlapping windows of --eval-seq-len tokens, NLL of tokens 1..L-1 of "
                     "each window. With scheme flags or --recipe, of the fake-quantized model "
                     "(calibrated block by block on --calib-data windows of --seq-len tokens), "
                     "followed by its fidelity to the full-precision model on the same windows "
                     "(llama.cpp's --kl-divergence statistics; the full-precision side is cached "
                     "in $QS_CACHE_DIR or ~/.cache/quantscope, QS_CACHE_DIR=off keeps no file).",
                     schemeHelp()))
        return 0;
    const QString dir = modelDirFromOptions(parser);
    applyThreadsOption(parser);
    RunRequest q = requestFromOptions(parser, dir, false);
    // The text: --data, else the one a --recipe names (evaluation.data).
    q.recipe.evaluation = evaluationFromOptions(parser, "data", q.recipe.evaluation);
    if (q.recipe.evaluation.dataPath.empty())
        throw UsageError{"--data TEXT is required (or a --recipe whose evaluation names a data "
                         "file)"};
    q.evaluate = true;
    q.fidelity = !parser.isSet("no-fidelity");
    // Launched as one rank of several (--nproc, torchrun, srun): rank 0 alone prints (every
    // rank computes the same figures).
    const bool speaks = joinRanksIfLaunched(parser, q) == 0;
    if (speaks)
        saveRecipeIfAsked(parser, q.recipe);
    const RunOutcome out = runJob(q, speaks ? progressFor(parser, "eval") : nullptr);
    if (!speaks)
        return 0;
    printWarnings("eval", out.warnings);
    const PerplexityResult& r = *out.perplexity;
    if (parser.isSet("json")) {
        nlohmann::json j = {{"tokens", r.tokens},
                            {"windows", r.windows},
                            {"seq_len", r.seqLen},
                            {"mean_nll", r.meanNll},
                            {"perplexity", r.perplexity},
                            {"tokens_per_second", r.tokensPerSecond},
                            {"device", r.device},
                            {"dtype", r.dtype},
                            {"provenance", provenanceJson(parser, q, out)}};
        j["distributed"] = distributedJson(q);
        if (out.fidelity)
            j["fidelity"] = out.fidelity->toJson();
        printJson(j);
        return 0;
    }
    std::printf("tokens             %lld\n", (long long)r.tokens);
    std::printf("windows            %lld\n", (long long)r.windows);
    std::printf("seq_len            %lld\n", (long long)r.seqLen);
    std::printf("mean_nll           %.6f\n", r.meanNll);
    std::printf("perplexity         %.4f\n", r.perplexity);
    std::printf("tokens_per_second  %.1f  (%s, %s)\n", r.tokensPerSecond, r.device.c_str(),
                r.dtype.c_str());
    if (out.fidelity)
        std::printf("\n%s", out.fidelity->toText().c_str());
    return 0;
}

} // namespace qs::cli
