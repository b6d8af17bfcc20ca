#pragma once

#include "tokenize/AddedTokenMatcher.h"
#include "tokenize/BpeModel.h"
#include "tokenize/HfDecoder.h"
#include "tokenize/HfNormalizer.h"
#include "tokenize/HfPreTokenizer.h"
#include "tokenize/Tokenizer.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs {

// A Hugging Face tokenizer.json with a BPE model, implemented in plain C++: byte-level BPE
// (GPT-2, Llama-3, Qwen2) and sentencepiece-style BPE with byte fallback (Llama-2 family). The
// pipeline is Hugging Face's: added tokens are split out first, then normalizer, pre-tokenizer,
// BPE; decoding runs the decoder steps. Encoding gives the same ids as the `tokenizers` library.
class HfBpeTokenizer : public Tokenizer {
public:
    // Throws qs::Error naming the file, the field and the reason for anything unusable.
    static std::unique_ptr<HfBpeTokenizer> fromTokenizerJson(const std::string& path);
    // GPT-2 style vocab.json + merges.txt (byte-level BPE with GPT-2's pre-tokenizer).
    static std::unique_ptr<HfBpeTokenizer> fromVocabAndMerges(const std::string& vocabJsonPath,
                                                              const std::string& mergesTxtPath);

    std::vector<int32_t> encode(const std::string& text) const override;
    // Special added tokens are skipped, as with Hugging Face's decode(skip_special_tokens=True).
    std::string decode(const std::vector<int32_t>& ids) const override;
    int32_t vocabSize() const override { return m_vocabSize; }
    int32_t bosId() const override { return m_bosId; }
    int32_t eosId() const override { return m_eosId; }
    std::string kind() const override { return m_byteLevel ? "hf-bpe-bytelevel" : "hf-bpe"; }

    void setBosId(int32_t id) { m_bosId = id; }
    void setEosId(int32_t id) { m_eosId = id; }
    int32_t tokenToId(const std::string& token) const; // added tokens included; -1 when absent
    std::string idToToken(int32_t id) const;           // empty when absent
    // The BOS token id the post_processor (TemplateProcessing) puts before a single sequence,
    // or -1 when it adds none.
    int32_t templateBosId() const { return m_templateBosId; }
    const std::string& sourcePath() const { return m_source; }

private:
    HfBpeTokenizer() = default;
    void addAddedToken(const AddedToken& token);
    void finishSetup();
    void encodeText(const std::string& text, bool atInputStart, std::vector<int32_t>& out) const;

    std::string m_source;
    std::unique_ptr<BpeModel> m_model;
    HfNormalizer m_normalizer;
    HfPreTokenizer m_preTokenizer;
    HfDecoder m_decoder;
    AddedTokenMatcher m_rawAdded;        // matched on the input (normalized = false)
    AddedTokenMatcher m_normalizedAdded; // matched after normalization
    std::unordered_map<int32_t, AddedToken> m_addedById;
    std::unordered_map<std::string, int32_t> m_addedByContent;
    bool m_byteLevel = false;
    int32_t m_vocabSize = 0;
    int32_t m_bosId = -1;
    int32_t m_eosId = -1;
    int32_t m_templateBosId = -1;
};

} // namespace qs
