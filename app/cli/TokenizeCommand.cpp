#include "CliCommon.h"

#include "eval/TextEvaluation.h"

#include <iostream>

namespace qs::cli {

int runTokenize(const QStringList& args) {
    QCommandLineParser parser;
    parser.addPositionalArgument(
        "MODEL_DIR", "Hugging Face checkpoint folder or llama GGUF file (its tokenizer).");
    parser.addOption(
        {"data", "UTF-8 text file to tokenize as evaluation does (BOS once).", "TEXT"});
    parser.addOption({"text", "Literal text to tokenize (no BOS).", "TEXT"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
    parser.addOption({"json", "Machine-readable output."});
    if (!parseOrHelp(parser, args,
                     "Prints the token ids of a text: with --data exactly the ids `eval` scores "
                     "(whole file, BOS prepended once), with --text the plain encoding."))
        return 0;
    const QString dir = modelFolder(singlePositional(parser, "MODEL_DIR"));
    if (parser.isSet("data") == parser.isSet("text"))
        throw UsageError{"give exactly one of --data FILE or --text TEXT"};
    const LoadedTokenizer tok = TokenizerLoader::load(
        dir.toStdString(), TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString()));
    const std::vector<int32_t> ids =
        parser.isSet("data") ? tokenizeFile(tok, parser.value("data").toStdString())
                             : tok.tokenizer->encode(parser.value("text").toStdString());
    if (parser.isSet("json")) {
        printJson({{"tokenizer", tok.sourceFile}, {"count", ids.size()}, {"ids", ids}});
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i)
        std::cout << ids[i] << (i + 1 < ids.size() ? ' ' : '\n');
    return 0;
}

} // namespace qs::cli
