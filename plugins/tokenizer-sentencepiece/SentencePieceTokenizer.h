#pragma once

#include "tokenize/Tokenizer.h"

#include <memory>
#include <string>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace qs {

// qs::Tokenizer over libsentencepiece. Lives in the plugin only: sentencepiece must never be
// linked into core or an executable (docs/pitfalls.md).
class SentencePieceTokenizer : public Tokenizer {
public:
    // nullptr and *error set when the file cannot be loaded; never throws.
    static std::unique_ptr<SentencePieceTokenizer> load(const std::string& path,
                                                        std::string* error);
    ~SentencePieceTokenizer() override;

    std::vector<int32_t> encode(const std::string& text) const override;
    std::string decode(const std::vector<int32_t>& ids) const override;
    int32_t vocabSize() const override;
    int32_t bosId() const override;
    int32_t eosId() const override;
    std::string kind() const override { return "sentencepiece"; }

private:
    SentencePieceTokenizer();
    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_processor;
};

} // namespace qs
