#pragma once

#include "tokenize/Tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace qs {

class TokenizerPlugin;

// Which implementation reads a model directory's tokenizer.
enum class TokenizerBackend {
    Auto,          // tokenizer.model through the sentencepiece plugin when both are there,
                   // else tokenizer.json, else vocab.json + merges.txt
    SentencePiece, // tokenizer.model through the plugin, nothing else
    HuggingFace,   // tokenizer.json (or vocab.json + merges.txt) with HfBpeTokenizer
};

struct LoadedTokenizer {
    std::unique_ptr<Tokenizer> tokenizer;
    bool addBos = false;    // prepend bosId() once before a text (docs/evaluation.md)
    std::string sourceFile; // the file the tokenizer was read from
    std::string note;       // why a preferred file was skipped, empty when none was
};

class TokenizerLoader {
public:
    // Throws qs::Error naming the directory, the files tried and why each was unusable.
    static LoadedTokenizer load(const std::string& modelDir,
                                TokenizerBackend backend = TokenizerBackend::Auto);

    // "auto", "sentencepiece" (or "sp"), "hf"; throws qs::Error for anything else.
    static TokenizerBackend parseBackend(const std::string& name);
    static std::string backendName(TokenizerBackend backend);

    // The folders searched for tokenizer plugins, in order: $QS_PLUGIN_PATH (a list), the
    // application's ../plugins, ./plugins and ../lib/quantscope/plugins, then the build tree's.
    static std::vector<std::string> pluginSearchPath();
    // The sentencepiece plugin, loaded once (DeepBindHint, never unloaded), or nullptr with the
    // reason in *error.
    static TokenizerPlugin* sentencePiecePlugin(std::string* error);
};

} // namespace qs
