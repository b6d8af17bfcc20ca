#include "CliCommon.h"

#include "eval/TextEvaluation.h"

namespace qs::cli {

int runGenerate(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument("MODEL_DIR",
                                 "Hugging Face checkpoint folder (or a llama GGUF file).");
    parser.addOption({"prompt", "Text to continue.", "TEXT"});
    parser.addOption({"max-new-tokens", "Tokens to generate at most.", "N", "64"});
    parser.addOption({"device", "cpu or cuda.", "DEVICE", "cpu"});
    parser.addOption({"dtype", "Compute dtype: float32, bfloat16 or float16.", "DTYPE", "float32"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
    parser.addOption({"json", "Machine-readable output (ids and text)."});
    addThreadsOption(parser);
    if (!parseOrHelp(parser, args, "Greedy continuation of a prompt."))
        return 0;
    const QString dir = modelFolder(singlePositional(parser, "MODEL_DIR"));
    if (!parser.isSet("prompt"))
        throw UsageError{"--prompt TEXT is required"};
    applyThreadsOption(parser);
    const std::string prompt = parser.value("prompt").toStdString();
    const GenerationResult r = generateFromPrompt(
        dir.toStdString(), prompt, intOption(parser, "max-new-tokens", 0, 1 << 20),
        parseComputeOptions(parser.value("device").toStdString(),
                            parser.value("dtype").toStdString()),
        TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString()));
    if (parser.isSet("json")) {
        printJson({{"prompt", prompt},
                   {"prompt_ids", r.promptIds},
                   {"new_ids", r.newIds},
                   {"text", r.text}});
        return 0;
    }
    printLine(prompt + r.text);
    return 0;
}

} // namespace qs::cli
