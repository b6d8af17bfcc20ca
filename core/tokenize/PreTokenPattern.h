#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qs {

// The pre-tokenization split regexes of the byte-level BPE families, implemented as hand-written
// scanners: std::regex has no \p{L}/\p{N}, and these patterns are few and fixed. Character classes
// follow Oniguruma's (what Hugging Face tokenizers uses): \s = Unicode White_Space, \p{L} =
// letters, \p{N} = numbers, taken from QChar on UCS-4 code points.
enum class PreTokenPattern {
    Gpt2,   // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Llama3, // (?i:'s|...|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
    Qwen2,  // as Llama3 with \p{N} (one digit per piece)
};

// The pattern whose regex source is exactly `regex` (as written in tokenizer.json), if known.
std::optional<PreTokenPattern> recognizePreTokenPattern(const std::string& regex);
const char* preTokenPatternRegex(PreTokenPattern pattern);

// Byte spans [begin, end) of the successive regex matches in `text`. The patterns match every
// character, so the spans tile the text.
std::vector<std::pair<size_t, size_t>> scanPreTokens(PreTokenPattern pattern,
                                                     std::string_view text);

} // namespace qs
