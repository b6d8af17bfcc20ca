#include "tokenize/Utf8.h"

namespace qs::utf8 {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Length of the valid sequence starting at `i` (1..4), or 0 when it is invalid. `validPrefix`
// receives how many bytes form the maximal valid prefix of an invalid sequence (at least 1).
size_t sequenceLength(std::string_view s, size_t i, char32_t* value, size_t* validPrefix) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    *validPrefix = 1;
    if (b0 < 0x80) {
        *value = b0;
        return 1;
    }
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0)
            lo = 0xA0;
        else if (b0 == 0xED)
            hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t k = 1; k <= need; ++k) {
        if (i + k >= s.size())
            return 0;
        const auto b = static_cast<unsigned char>(s[i + k]);
        const unsigned char l = k == 1 ? lo : 0x80;
        const unsigned char h = k == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return 0;
        cp = (cp << 6) | (b & 0x3F);
        *validPrefix = k + 1;
    }
    *value = cp;
    return need + 1;
}

} // namespace

std::vector<CodePoint> decode(std::string_view text) {
    std::vector<CodePoint> out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        char32_t cp = 0;
        size_t prefix = 0;
        const size_t len = sequenceLength(text, i, &cp, &prefix);
        if (len == 0) {
            out.push_back({kReplacement, i});
            ++i;
        } else {
            out.push_back({cp, i});
            i += len;
        }
    }
    return out;
}

void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string encode(char32_t cp) {
    std::string s;
    append(s, cp);
    return s;
}

std::string toValidLossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t i = 0;
    while (i < bytes.size()) {
        char32_t cp = 0;
        size_t prefix = 0;
        const size_t len = sequenceLength(bytes, i, &cp, &prefix);
        if (len == 0) {
            append(out, kReplacement);
            i += prefix;
        } else {
            out.append(bytes.substr(i, len));
            i += len;
        }
    }
    return out;
}

bool isValid(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        char32_t cp = 0;
        size_t prefix = 0;
        const size_t len = sequenceLength(bytes, i, &cp, &prefix);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

} // namespace qs::utf8
