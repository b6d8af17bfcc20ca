#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qs::utf8 {

// One decoded code point and where its bytes start in the source string.
struct CodePoint {
    char32_t value;
    size_t offset;
};

// Decodes `text` into code points. Each byte of an invalid sequence becomes U+FFFD on its own, so
// every byte of the input belongs to exactly one entry (pre-token spans stay byte-exact).
std::vector<CodePoint> decode(std::string_view text);

void append(std::string& out, char32_t codePoint);
std::string encode(char32_t codePoint);

// Replaces invalid UTF-8 the way Rust's String::from_utf8_lossy does (one U+FFFD per maximal
// invalid subpart), which is what Hugging Face decoders produce.
std::string toValidLossy(std::string_view bytes);
bool isValid(std::string_view bytes);

} // namespace qs::utf8
