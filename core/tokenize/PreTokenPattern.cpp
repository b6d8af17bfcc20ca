#include "tokenize/PreTokenPattern.h"

#include "tokenize/Utf8.h"

#include <QChar>

namespace qs {

namespace {

constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum Class : unsigned char { Letter = 1, Number = 2, Space = 4, Other = 8 };

// The code points of the text with their character class, computed once per scan.
struct Chars {
    std::vector<utf8::CodePoint> cps;
    std::vector<unsigned char> cls;

    explicit Chars(std::string_view text) : cps(utf8::decode(text)) {
        cls.resize(cps.size());
        for (size_t i = 0; i < cps.size(); ++i) {
            const char32_t c = cps[i].value;
            if (QChar::isLetter(c))
                cls[i] = Letter;
            else if (QChar::isNumber(c))
                cls[i] = Number;
            else if (QChar::isSpace(c))
                cls[i] = Space;
            else
                cls[i] = Other;
        }
    }
    size_t size() const { return cps.size(); }
    char32_t at(size_t i) const { return cps[i].value; }
    bool is(size_t i, unsigned char c) const { return i < cps.size() && (cls[i] & c); }
    size_t run(size_t i, unsigned char c) const {
        while (i < cps.size() && (cls[i] & c))
            ++i;
        return i;
    }
};

bool isCrLf(char32_t c) {
    return c == U'\r' || c == U'\n';
}

// Oniguruma's (?i) folds ASCII case plus U+017F LATIN SMALL LETTER LONG S, which folds to 's'.
char32_t foldCase(char32_t c, bool ignoreCase) {
    if (!ignoreCase)
        return c;
    if (c >= U'A' && c <= U'Z')
        return c + 32;
    if (c == 0x017F)
        return U's';
    return c;
}

// 's|'t|'re|'ve|'m|'ll|'d: the end of the match at `i`, or 0.
size_t matchContraction(const Chars& s, size_t i, bool ignoreCase) {
    if (s.at(i) != U'\'' || i + 1 >= s.size())
        return 0;
    const char32_t a = foldCase(s.at(i + 1), ignoreCase);
    if (a == U's' || a == U't' || a == U'm' || a == U'd')
        return i + 2;
    if (i + 2 >= s.size())
        return 0;
    const char32_t b = foldCase(s.at(i + 2), ignoreCase);
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
        return i + 3;
    return 0;
}

// \s+(?!\S)|\s+ at a whitespace position: the whole run when it ends the text, otherwise the run
// less its last character (which then prefixes the following word), but never less than one.
size_t matchTrailingSpace(const Chars& s, size_t i) {
    const size_t end = s.run(i, Space);
    if (end == s.size() || end - i < 2)
        return end;
    return end - 1;
}

size_t matchGpt2(const Chars& s, size_t i) {
    if (size_t e = matchContraction(s, i, false))
        return e;
    const size_t j = s.at(i) == U' ' ? i + 1 : i;
    if (s.is(j, Letter))
        return s.run(j, Letter);
    if (s.is(j, Number))
        return s.run(j, Number);
    if (s.is(j, Other))
        return s.run(j, Other);
    return matchTrailingSpace(s, i);
}

size_t matchLlama3(const Chars& s, size_t i, size_t maxDigits) {
    if (size_t e = matchContraction(s, i, true))
        return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (s.is(i, Letter))
        return s.run(i, Letter);
    if (!isCrLf(s.at(i)) && !s.is(i, Number) && s.is(i + 1, Letter))
        return s.run(i + 1, Letter);
    // \p{N}{1,n}
    if (s.is(i, Number)) {
        size_t j = i;
        while (j < s.size() && j - i < maxDigits && s.is(j, Number))
            ++j;
        return j;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    const size_t j = s.at(i) == U' ' ? i + 1 : i;
    if (s.is(j, Other)) {
        size_t e = s.run(j, Other);
        while (e < s.size() && isCrLf(s.at(e)))
            ++e;
        return e;
    }
    // \s*[\r\n]+ : the whitespace run up to and including its last CR/LF.
    const size_t runEnd = s.run(i, Space);
    for (size_t k = runEnd; k > i; --k) {
        if (isCrLf(s.at(k - 1)))
            return k;
    }
    return matchTrailingSpace(s, i);
}

} // namespace

std::optional<PreTokenPattern> recognizePreTokenPattern(const std::string& regex) {
    if (regex == kGpt2Regex)
        return PreTokenPattern::Gpt2;
    if (regex == kLlama3Regex)
        return PreTokenPattern::Llama3;
    if (regex == kQwen2Regex)
        return PreTokenPattern::Qwen2;
    return std::nullopt;
}

const char* preTokenPatternRegex(PreTokenPattern pattern) {
    switch (pattern) {
    case PreTokenPattern::Gpt2:
        return kGpt2Regex;
    case PreTokenPattern::Llama3:
        return kLlama3Regex;
    case PreTokenPattern::Qwen2:
        return kQwen2Regex;
    }
    return "";
}

std::vector<std::pair<size_t, size_t>> scanPreTokens(PreTokenPattern pattern,
                                                     std::string_view text) {
    const Chars s(text);
    std::vector<std::pair<size_t, size_t>> spans;
    size_t i = 0;
    while (i < s.size()) {
        size_t end = 0;
        switch (pattern) {
        case PreTokenPattern::Gpt2:
            end = matchGpt2(s, i);
            break;
        case PreTokenPattern::Llama3:
            end = matchLlama3(s, i, 3);
            break;
        case PreTokenPattern::Qwen2:
            end = matchLlama3(s, i, 1);
            break;
        }
        if (end <= i) // cannot happen (every class is matched), but never loop forever
            end = i + 1;
        const size_t b = s.cps[i].offset;
        const size_t e = end < s.size() ? s.cps[end].offset : text.size();
        spans.emplace_back(b, e);
        i = end;
    }
    return spans;
}

} // namespace qs
