#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qs {

// A text tokenizer as the evaluation protocol needs it (docs/evaluation.md): ids of a whole text,
// BOS handling from the tokenizer's config, and decoding for generation. Torch-free.
class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // Token ids of `text` without any special tokens.
    virtual std::vector<int32_t> encode(const std::string& text) const = 0;
    virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
    virtual int32_t vocabSize() const = 0;
    virtual int32_t bosId() const = 0; // -1 when the tokenizer has none
    virtual int32_t eosId() const = 0; // -1 when the tokenizer has none
    // Which implementation this is, e.g. "sentencepiece" or "hf-bpe", for reports.
    virtual std::string kind() const = 0;
};

} // namespace qs
