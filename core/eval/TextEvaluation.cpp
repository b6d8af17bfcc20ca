#include "eval/TextEvaluation.h"

#include "eval/Perplexity.h"
#include "io/JsonFields.h"
#include "util/Error.h"

#include <algorithm>

namespace qs {

std::string readTextUniversalNewlines(const std::string& path) {
    // Python's text mode (which the reference figures of docs/evaluation.md were computed with)
    // turns "\r\n" and lone "\r" into "\n"; the shared TinyStories file has CRLF line ends.
    const std::string raw = readTextFile(path);
    std::string text;
    text.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            text.push_back('\n');
            if (i + 1 < raw.size() && raw[i + 1] == '\n')
                ++i;
        } else {
            text.push_back(raw[i]);
        }
    }
    return text;
}

std::vector<int32_t> tokenizeFile(const LoadedTokenizer& tok, const std::string& path) {
    const std::string text = readTextUniversalNewlines(path);
    std::vector<int32_t> ids;
    if (tok.addBos && tok.tokenizer->bosId() >= 0)
        ids.push_back(tok.tokenizer->bosId());
    const std::vector<int32_t> body = tok.tokenizer->encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

int64_t defaultSeqLen(const ModelConfig& config) {
    return config.maxPositions > 0 ? std::min<int64_t>(512, config.maxPositions) : 512;
}

void checkTokenIds(const std::vector<int32_t>& ids, const ModelConfig& config,
                   const std::string& src) {
    for (int32_t id : ids)
        if (id < 0 || id >= config.vocabSize)
            throw Error(src, "",
                        "tokenizer produced id " + std::to_string(id) +
                            " outside the model's vocab_size " + std::to_string(config.vocabSize));
}

GenerationResult generateFromPrompt(const std::string& modelDir, const std::string& prompt,
                                    int64_t maxNewTokens, const ComputeOptions& compute,
                                    TokenizerBackend backend) {
    const ModelHandle handle = openModelHandle(modelDir);
    handle.moduleTree();
    const LoadedTokenizer tok = TokenizerLoader::load(modelDir, backend);
    GenerationResult r;
    if (tok.addBos && tok.tokenizer->bosId() >= 0)
        r.promptIds.push_back(tok.tokenizer->bosId());
    const std::vector<int32_t> body = tok.tokenizer->encode(prompt);
    r.promptIds.insert(r.promptIds.end(), body.begin(), body.end());
    checkTokenIds(r.promptIds, handle.config, tok.sourceFile);
    ModelRunner runner(handle.instantiate(compute));
    const int64_t eos =
        tok.tokenizer->eosId() >= 0 ? tok.tokenizer->eosId() : handle.config.eosTokenId;
    const std::vector<int32_t> all = generateGreedy(runner, r.promptIds, maxNewTokens, eos);
    r.newIds.assign(all.begin() + int64_t(r.promptIds.size()), all.end());
    std::vector<int32_t> visible = r.newIds;
    if (!visible.empty() && visible.back() == eos)
        visible.pop_back();
    // Decode prompt + continuation together so word-boundary spaces come out right, then cut.
    const std::string promptText = tok.tokenizer->decode(body);
    std::vector<int32_t> joined = body;
    joined.insert(joined.end(), visible.begin(), visible.end());
    const std::string full = tok.tokenizer->decode(joined);
    r.text = full.rfind(promptText, 0) == 0 ? full.substr(promptText.size())
                                            : tok.tokenizer->decode(visible);
    return r;
}

} // namespace qs
