#include "CliCommon.h"
#include "QuantOptions.h"

#include "calib/QuantizationRun.h"

#include <cstdio>
#include <numeric>

namespace qs::cli {

int runQuantize(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument("MODEL_DIR", "Hugging Face checkpoint folder.");
    addQuantOptions(parser, "seq-len");
    parser.addOption(
        {"out", "Output folder (with several --format, one subfolder per format).", "DIR"});
    parser.addOption({"format",
                      "Export format, repeatable: fake (fake-quantized float checkpoint, the "
                      "default), quark (AMD Quark hf_format, real quantized), gguf, onnx.",
                      "FORMAT"});
    parser.addOption(
        {"gguf-type", "GGUF tensor type: f32, f16, q8_0 (default), q4_0, q4_1.", "TYPE", "q8_0"});
    parser.addOption({"allow-unloadable",
                      "Write layouts the format holds but its consumers refuse (as Quark does for "
                      "int4 layers whose packed axis is not a multiple of 8), warning per layer."});
    parser.addOption(
        {"model_export", "Quark's name for --format (hf_format, gguf, onnx).", "FORMAT"});
    parser.addOption({"device", "cpu or cuda.", "DEVICE", "cpu"});
    parser.addOption({"dtype", "Compute dtype: float32, bfloat16 or float16.", "DTYPE", "float32"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
    parser.addOption({"json", "Machine-readable summary."});
    addThreadsOption(parser);
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Quantizes a model block by block and writes it in each --format (default: a "
                     "fake-quantized Hugging Face checkpoint) plus the recipe used "
                     "(quantscope_recipe.json); replaying that recipe with --recipe gives "
                     "bit-identical files on CPU. A format that cannot hold a layer's scheme is "
                     "refused before any work, naming the layer."))
        return 0;
    const QString dir = singlePositional(parser, "MODEL_DIR");
    if (!parser.isSet("out"))
        throw UsageError{"--out DIR is required"};
    applyThreadsOption(parser);
    QuantizationRequest q = requestFromOptions(parser, dir);
    q.outDir = parser.value("out").toStdString();
    q.allowUnloadable = parser.isSet("allow-unloadable");
    q.ggufType = parser.value("gguf-type").toStdString();
    for (const QString& f : parser.values("format") + parser.values("model_export"))
        for (const QString& part : f.split(',', Qt::SkipEmptyParts))
            q.exportFormats.push_back(part.trimmed().toStdString());
    const QuantizationOutcome out = runQuantization(q, terminalProgress("quantize"));
    printWarnings("quantize", out.warnings);
    const double seconds = std::accumulate(out.blockSeconds.begin(), out.blockSeconds.end(), 0.0);
    if (parser.isSet("json")) {
        printJson({{"out", q.outDir},
                   {"blocks", out.blockSeconds.size()},
                   {"seconds", seconds},
                   {"skipped", out.skipped}});
        return 0;
    }
    std::printf("wrote %s (%zu blocks in %.2f s)\n", q.outDir.c_str(), out.blockSeconds.size(),
                seconds);
    for (const std::string& s : out.skipped)
        std::printf("not quantized (unfit): %s\n", s.c_str());
    return 0;
}

} // namespace qs::cli
