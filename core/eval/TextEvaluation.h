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

// Default window: 512, or the model's max positions when smaller.
int64_t defaultSeqLen(const ModelConfig& config);

// Opens the model folder, its tokenizer and the text, and runs the perplexity protocol.
// `progress(fraction, message)` returning false cancels (qs::Cancelled).
PerplexityResult
evaluateModelOnText(const std::string& modelDir, const EvalRequest& request,
                    const std::function<bool(double, const std::string&)>& progress = {},
                    TokenizerBackend backend = TokenizerBackend::Auto);

struct GenerationResult {
    std::vector<int32_t> promptIds;
    std::vector<int32_t> newIds;
    std::string text; // decoded continuation only
};

GenerationResult generateFromPrompt(const std::string& modelDir, const std::string& prompt,
                                    int64_t maxNewTokens, const ComputeOptions& compute,
                                    TokenizerBackend backend = TokenizerBackend::Auto);

} // namespace qs
