#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// llama.cpp's token types (gguf TokenType, equal to sentencepiece's piece types).
enum class GgufTokenType : int32_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

// The tokenizer.ggml.* metadata of a Hugging Face tokenizer.json, as llama.cpp's converter
// (convert_hf_to_gguf.py, LlamaModel.set_vocab) derives it when a checkpoint has no
// sentencepiece tokenizer.model:
//  - a sentencepiece-style BPE (byte_fallback, a Sequence decoder: "▁" word prefix): model
//    "llama", pre "default", tokens/scores/types as gguf-py's LlamaHfVocab gives them, except
//    the scores (see tokenizerJsonGgufVocab);
//  - a byte-level BPE (ByteLevel pre-tokenizer and decoder): model "gpt2", the pre-tokenizer's
//    llama.cpp name, tokens/types as get_vocab_base gives them, and the merges;
// plus the special token ids and add_*_token flags gguf-py's SpecialVocab reads from
// tokenizer.json, tokenizer_config.json and config.json.
struct GgufVocab {
    std::string model;               // tokenizer.ggml.model
    std::string pre;                 // tokenizer.ggml.pre
    std::vector<std::string> tokens; // by id
    std::vector<float> scores;       // "llama" only (empty for "gpt2")
    std::vector<int32_t> types;      // GgufTokenType values
    std::vector<std::string> merges; // "gpt2" only: "left right", by rank
    // Metadata keys with their values, in the order SpecialVocab writes them.
    std::vector<std::pair<std::string, uint32_t>> specialIds; // e.g. tokenizer.ggml.bos_token_id
    std::vector<std::pair<std::string, bool>> addSpecial;     // e.g. tokenizer.ggml.add_bos_token
};

// Reads `sourceDir`/tokenizer.json (and tokenizer_config.json, special_tokens_map.json,
// config.json beside it). `modelVocabSize` is config.json's vocab_size (the rows of the
// embedding, which llama.cpp requires the token list to match): ids the tokenizer does not
// define up to it become "[PAD<id>]" UNUSED tokens, as the converter pads. Throws qs::Error
// naming the file, the field and the reason for a tokenizer llama.cpp would tokenize
// differently (another model type or pre-tokenizer, a normalizer it does not apply, holes in the
// ids, more tokens than the embedding has rows).
GgufVocab tokenizerJsonGgufVocab(const std::string& sourceDir, int64_t modelVocabSize);

} // namespace qs
