#pragma once

#include "eval/PerplexityResult.h"
#include "model/ModelLoader.h"
#include "tokenize/TokenizerLoader.h"

#include <functional>
#include <string>
#include <vector>

namespace qs {

// A whole UTF-8 text file with "\r\n" and "\r" read as "\n" (Python's universal newlines).
std::string readTextUniversalNewlines(const std::string& path);

// Ids of a whole text file as the evaluation protocol wants them: tokenized once, BOS prepended
// once when the tokenizer adds one.
std::vector<int32_t> tokenizeFile(const LoadedTokenizer& tokenizer, const std::string& path);

// Throws qs::Error naming `source` when an id is outside the model's vocabulary.
void checkTokenIds(const std::vector<int32_t>& ids, const ModelConfig& config,
                   const std::string& source);

// Default window: 512, or the model's max positions when smaller.
int64_t defaultSeqLen(const ModelConfig& config);

struct GenerationResult {
    std::vector<int32_t> promptIds;
    std::vector<int32_t> newIds;
    std::string text; // decoded continuation only
};

GenerationResult generateFromPrompt(const std::string& modelDir, const std::string& prompt,
                                    int64_t maxNewTokens, const ComputeOptions& compute,
                                    TokenizerBackend backend = TokenizerBackend::Auto);

} // namespace qs
