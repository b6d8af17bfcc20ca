#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qs {

// The BPE model of Hugging Face tokenizers: a vocabulary, merges by rank, and the unknown/byte
// fallback rules, applied to one pre-tokenized word at a time. Results for short words are
// cached, so running text costs about one hash lookup per word.
class BpeModel {
public:
    struct Options {
        std::string unkToken; // empty: none
        bool fuseUnk = false;
        bool byteFallback = false; // characters missing from the vocabulary become <0xNN> tokens
        bool ignoreMerges = false; // a word found whole in the vocabulary is one token
    };

    // Throws qs::Error naming `source` when a merge or the unk token refers to unknown tokens.
    BpeModel(std::unordered_map<std::string, int32_t> vocab,
             const std::vector<std::pair<std::string, std::string>>& merges, Options options,
             const std::string& source);

    // Appends the ids of `word` to `out`.
    void tokenize(std::string_view word, std::vector<int32_t>& out) const;

    int32_t tokenToId(const std::string& token) const; // -1 when absent
    const std::string* idToToken(int32_t id) const;    // nullptr when absent
    int32_t maxId() const { return static_cast<int32_t>(m_idToToken.size()) - 1; }
    size_t mergeCount() const { return m_merges.size(); }

private:
    struct Merge {
        int32_t rank;
        int32_t newId;
    };
    static uint64_t pairKey(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    void mergeWord(std::string_view word, std::vector<int32_t>& out) const;
    void initialSymbols(std::string_view word, std::vector<int32_t>& ids) const;

    std::unordered_map<std::string, int32_t> m_vocab;
    std::vector<std::string> m_idToToken;
    std::vector<bool> m_hasToken;
    std::unordered_map<uint64_t, Merge> m_merges;
    Options m_options;
    int32_t m_unkId = -1;
    int32_t m_byteIds[256];      // <0xNN> tokens, -1 when missing
    int32_t m_asciiCharIds[128]; // vocabulary ids of one-character ASCII tokens, -1 when missing

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> m_cache;
};

} // namespace qs
