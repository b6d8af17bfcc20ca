#include "CliCommon.h"
#include "QuantOptions.h"

#include "calib/QuantizationRun.h"

#include <cmath>
#include <cstdio>

namespace qs::cli {

namespace {

std::string db(const ErrorMetrics& m) {
    if (!m.valid)
        return "-";
    if (!std::isfinite(m.sqnrDb))
        return "exact";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", m.sqnrDb);
    return buf;
}

} // namespace

int runAnalyze(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument("MODEL_DIR", "Hugging Face checkpoint folder.");
    addQuantOptions(parser, "seq-len");
    parser.addOption({"device", "cpu or cuda.", "DEVICE", "cpu"});
    parser.addOption({"dtype", "Compute dtype: float32, bfloat16 or float16.", "DTYPE", "float32"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
    parser.addOption({"top", "Outlier layers listed in the text summary.", "N", "10"});
    parser.addOption({"no-channels", "Leave per-channel arrays out of the JSON report."});
    parser.addOption({"json", "The full per-layer report as JSON, keyed by layer name."});
    addThreadsOption(parser);
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Per-layer quantization analysis on calibration data: weight error, output "
                     "error (local and accumulated), activation statistics per input channel, "
                     "histograms and an outlier ranking."))
        return 0;
    const QString dir = singlePositional(parser, "MODEL_DIR");
    if (!hasQuantOptions(parser))
        throw UsageError{"give a scheme (--quant-scheme S) or a --recipe FILE"};
    applyThreadsOption(parser);
    QuantizationRequest q;
    q.modelDir = dir.toStdString();
    q.recipe = recipeFromOptions(parser, "seq-len");
    saveRecipeIfAsked(parser, q.recipe);
    q.compute = parseComputeOptions(parser.value("device").toStdString(),
                                    parser.value("dtype").toStdString());
    q.analyze = true;
    q.tokenizer = TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString());
    const QuantizationOutcome out = runQuantization(q);
    if (parser.isSet("json")) {
        printJson(out.report.toJson(!parser.isSet("no-channels")));
        return 0;
    }
    std::printf("%-42s %-14s %9s %9s %9s %10s %8s\n", "layer", "scheme", "w SQNR", "local", "accum",
                "in absmax", "outlier");
    for (const LayerReport& l : out.report.layers)
        std::printf("%-42s %-14s %9s %9s %9s %10.3g %8.1f\n", l.name.c_str(),
                    (l.quantized ? l.scheme : l.note).substr(0, 14).c_str(), db(l.weight).c_str(),
                    db(l.outputLocal).c_str(), db(l.outputAccumulated).c_str(), l.inputAbsmax,
                    l.outlierScore);
    std::printf("\ntop outlier layers (input absmax / median channel absmax):\n");
    const auto ranking = out.report.outlierRanking();
    const int64_t top = intOption(parser, "top", 0, 1 << 20);
    for (size_t i = 0; i < ranking.size() && int64_t(i) < top; ++i)
        std::printf("  %2zu. %-42s %8.1f\n", i + 1, ranking[i].first.c_str(), ranking[i].second);
    for (const std::string& s : out.skipped)
        std::printf("not quantized (unfit): %s\n", s.c_str());
    return 0;
}

} // namespace qs::cli
