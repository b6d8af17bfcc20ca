#include "SentencePieceTokenizer.h"

#include <sentencepiece_processor.h>

namespace qs {

SentencePieceTokenizer::SentencePieceTokenizer()
    : m_processor(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path,
                                                                     std::string* error) {
    try {
        std::unique_ptr<SentencePieceTokenizer> tok(new SentencePieceTokenizer);
        const auto status = tok->m_processor->Load(path);
        if (!status.ok()) {
            if (error)
                *error = status.ToString();
            return nullptr;
        }
        return tok;
    } catch (const std::exception& e) {
        if (error)
            *error = e.what();
        return nullptr;
    }
}

std::vector<int32_t> SentencePieceTokenizer::encode(const std::string& text) const {
    std::vector<int> ids;
    // Errors only for an unloaded model, which load() rules out; an empty result is the fallback.
    if (!m_processor->Encode(text, &ids).ok())
        return {};
    return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string text;
    const std::vector<int> v(ids.begin(), ids.end());
    if (!m_processor->Decode(v, &text).ok())
        return {};
    return text;
}

int32_t SentencePieceTokenizer::vocabSize() const {
    return m_processor->GetPieceSize();
}
int32_t SentencePieceTokenizer::bosId() const {
    return m_processor->bos_id();
}
int32_t SentencePieceTokenizer::eosId() const {
    return m_processor->eos_id();
}

} // namespace qs
