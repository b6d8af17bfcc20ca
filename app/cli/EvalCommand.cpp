#include "CliCommon.h"

#include "QuantOptions.h"
#include "calib/QuantizationRun.h"
#include "eval/TextEvaluation.h"

#include <cstdio>

namespace qs::cli {

int runEval(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument("MODEL_DIR", "Hugging Face checkpoint folder.");
    parser.addOption({"data", "UTF-8 text file to evaluate on.", "TEXT"});
    parser.addOption(
        {"seq-len", "Window length in tokens (default 512 or max positions).", "N", "0"});
    parser.addOption(
        {"max-windows", "Evaluate only the first N windows (default: all).", "N", "0"});
    parser.addOption({"device", "cpu or cuda.", "DEVICE", "cpu"});
    parser.addOption({"dtype", "Compute dtype: float32, bfloat16 or float16.", "DTYPE", "float32"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
    parser.addOption({"json", "Machine-readable output."});
    addThreadsOption(parser);
    addQuantOptions(parser, "calib-seq-len");
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Perplexity of a model on a text: tokenized once with BOS, cut into "
                     "non-overlapping windows, NLL of tokens 1..L-1 of each window. With scheme "
                     "flags or --recipe, of the fake-quantized model (calibrated block by block)."))
        return 0;
    const QString dir = singlePositional(parser, "MODEL_DIR");
    if (!parser.isSet("data"))
        throw UsageError{"--data TEXT is required"};
    applyThreadsOption(parser);
    EvalRequest req;
    req.evaluation.dataPath = parser.value("data").toStdString();
    req.evaluation.seqLen = intOption(parser, "seq-len", 0, int64_t(1) << 24);
    req.evaluation.maxWindows = intOption(parser, "max-windows", 0, int64_t(1) << 40);
    req.device = parser.value("device").toStdString();
    req.dtype = parser.value("dtype").toStdString();
    const TokenizerBackend backend =
        TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString());
    PerplexityResult r;
    if (hasQuantOptions(parser)) {
        QuantizationRequest q;
        q.modelDir = dir.toStdString();
        q.recipe = recipeFromOptions(parser, "calib-seq-len");
        q.recipe.evaluation = req.evaluation;
        saveRecipeIfAsked(parser, q.recipe);
        q.compute = parseComputeOptions(req.device, req.dtype);
        q.evaluate = true;
        q.tokenizer = backend;
        const QuantizationOutcome out = runQuantization(q, terminalProgress("eval"));
        printWarnings("eval", out.warnings);
        r = *out.perplexity;
    } else {
        if (parser.isSet("save-recipe"))
            throw UsageError{"--save-recipe: nothing to record without a scheme or --recipe"};
        std::vector<std::string> warnings;
        r = evaluateModelOnText(dir.toStdString(), req, terminalProgress("eval"), backend,
                                &warnings);
        printWarnings("eval", warnings);
    }
    if (parser.isSet("json")) {
        printJson({{"tokens", r.tokens},
                   {"windows", r.windows},
                   {"seq_len", r.seqLen},
                   {"mean_nll", r.meanNll},
                   {"perplexity", r.perplexity},
                   {"tokens_per_second", r.tokensPerSecond},
                   {"device", r.device},
                   {"dtype", r.dtype}});
        return 0;
    }
    std::printf("tokens             %lld\n", (long long)r.tokens);
    std::printf("windows            %lld\n", (long long)r.windows);
    std::printf("seq_len            %lld\n", (long long)r.seqLen);
    std::printf("mean_nll           %.6f\n", r.meanNll);
    std::printf("perplexity         %.4f\n", r.perplexity);
    std::printf("tokens_per_second  %.1f  (%s, %s)\n", r.tokensPerSecond, r.device.c_str(),
                r.dtype.c_str());
    return 0;
}

} // namespace qs::cli
