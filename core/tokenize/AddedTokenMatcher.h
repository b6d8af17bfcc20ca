#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qs {

// A token from tokenizer.json "added_tokens" (special tokens such as <s>, chat markers, ...).
struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

// Finds added tokens in text the way Hugging Face's AddedVocabulary does: leftmost-longest,
// non-overlapping matches, with the single_word / lstrip / rstrip rules.
class AddedTokenMatcher {
public:
    struct Segment {
        size_t begin;
        size_t end;
        int32_t tokenId; // -1: ordinary text to normalize and tokenize
    };

    void add(const AddedToken& token);
    bool empty() const { return m_tokens.empty(); }

    // Cuts `text` into token and text segments covering it (whitespace stripped by lstrip/rstrip
    // belongs to the token).
    std::vector<Segment> split(std::string_view text) const;

private:
    std::vector<AddedToken> m_tokens;
    std::vector<std::vector<size_t>> m_byFirstByte = std::vector<std::vector<size_t>>(256);
};

} // namespace qs
