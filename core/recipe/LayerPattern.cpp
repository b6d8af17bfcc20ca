#include "recipe/LayerPattern.h"

#include "recipe/LinearRegex.h"
#include "util/Error.h"

#include <cctype>
#include <utility>
#include <vector>

namespace qs {

namespace {

constexpr const char* kRegexPrefix = "re:";

struct GlobToken {
    enum Kind { Star, AnyChar, Literal, Set } kind = Literal;
    char literal = 0;
    bool negated = false;
    std::vector<std::pair<char, char>> ranges; // inclusive; a single character is (c, c)

    bool matches(char c) const {
        switch (kind) {
        case AnyChar:
            return true;
        case Literal:
            return c == literal;
        case Set: {
            bool in = false;
            for (const auto& [lo, hi] : ranges)
                in = in || (c >= lo && c <= hi);
            return in != negated;
        }
        case Star:
            break;
        }
        return false;
    }
};

// Mirrors Python's fnmatch.translate for well-formed patterns: "[" opens a set up to the next
// "]" (a "]" right after "[" or "[!" belongs to the set), a '-' between two characters is a
// range (a reversed range matches nothing), and a "[" with no closing "]" is literal.
std::vector<GlobToken> parseGlob(const std::string& pattern) {
    std::vector<GlobToken> tokens;
    const size_t n = pattern.size();
    size_t i = 0;
    while (i < n) {
        const char c = pattern[i++];
        GlobToken t;
        if (c == '*') {
            if (!tokens.empty() && tokens.back().kind == GlobToken::Star)
                continue;
            t.kind = GlobToken::Star;
        } else if (c == '?') {
            t.kind = GlobToken::AnyChar;
        } else if (c == '[') {
            size_t j = i;
            if (j < n && pattern[j] == '!')
                ++j;
            if (j < n && pattern[j] == ']')
                ++j;
            while (j < n && pattern[j] != ']')
                ++j;
            if (j >= n) {
                t.literal = '[';
            } else {
                size_t k = i;
                t.kind = GlobToken::Set;
                if (pattern[k] == '!') {
                    t.negated = true;
                    ++k;
                }
                while (k < j) {
                    if (k + 2 < j && pattern[k + 1] == '-') {
                        if (pattern[k] <= pattern[k + 2])
                            t.ranges.emplace_back(pattern[k], pattern[k + 2]);
                        k += 3;
                    } else {
                        t.ranges.emplace_back(pattern[k], pattern[k]);
                        ++k;
                    }
                }
                i = j + 1;
            }
        } else {
            t.literal = c;
        }
        tokens.push_back(std::move(t));
    }
    return tokens;
}

bool globMatch(const std::vector<GlobToken>& tokens, const std::string& name) {
    // Every token but '*' consumes exactly one character, so the classic two-pointer search
    // with backtracking to the last star is exact.
    size_t p = 0, s = 0;
    size_t starToken = std::string::npos, starPos = 0;
    while (s < name.size()) {
        if (p < tokens.size() && tokens[p].kind == GlobToken::Star) {
            starToken = p++;
            starPos = s;
        } else if (p < tokens.size() && tokens[p].matches(name[s])) {
            ++p;
            ++s;
        } else if (starToken != std::string::npos) {
            p = starToken + 1;
            s = ++starPos;
        } else {
            return false;
        }
    }
    while (p < tokens.size() && tokens[p].kind == GlobToken::Star)
        ++p;
    return p == tokens.size();
}

} // namespace

bool isRegexPattern(const std::string& pattern) {
    return pattern.compare(0, 3, kRegexPrefix) == 0;
}

bool isExactLayerName(const std::string& pattern) {
    return !isRegexPattern(pattern) && pattern.find_first_of("*?[") == std::string::npos;
}

bool matchesLayerPattern(const std::string& pattern, const std::string& name) {
    // A pattern validateLayerPattern refuses matches nothing (an empty "re:" used to match the
    // empty name: found by fuzz_layer_pattern).
    if (pattern.empty() || pattern.size() > kMaxPatternLength || pattern == kRegexPrefix)
        return false;
    if (isRegexPattern(pattern)) {
        try {
            return regexFullMatch(pattern.substr(3), name);
        } catch (const RegexSyntaxError&) {
            return false; // validateLayerPattern reports these; an invalid regex matches nothing
        }
    }
    if (isExactLayerName(pattern))
        return pattern == name;
    return globMatch(parseGlob(pattern), name);
}

void validateLayerPattern(const std::string& pattern, const std::string& source,
                          const std::string& field) {
    if (pattern.empty())
        throw Error(source, field, "empty layer pattern");
    if (pattern.size() > kMaxPatternLength)
        throw Error(source, field,
                    "layer pattern longer than " + std::to_string(kMaxPatternLength) +
                        " characters (kMaxPatternLength)");
    if (!isRegexPattern(pattern))
        return;
    const std::string expression = pattern.substr(3);
    if (expression.empty())
        throw Error(source, field, "empty regular expression after 're:'");
    try {
        checkRegex(expression);
    } catch (const RegexSyntaxError& e) {
        throw Error(source, field,
                    "invalid regular expression '" + expression + "': " + std::string(e.what()));
    }
}

std::string exactLayerPattern(const std::string& layerName) {
    std::string pattern;
    pattern.reserve(layerName.size() + 2);
    // A name starting with "re:" would otherwise read back as a regular expression (found by
    // fuzz_layer_pattern): "[r]" keeps the result an fnmatch pattern naming the same layer.
    size_t i = 0;
    if (isRegexPattern(layerName)) {
        pattern += "[r]";
        i = 1;
    }
    for (; i < layerName.size(); ++i) {
        const char c = layerName[i];
        if (c == '[' || c == '?' || c == '*') {
            pattern += '[';
            pattern += c;
            pattern += ']';
        } else {
            pattern += c;
        }
    }
    return pattern;
}

std::string layerKindOf(const std::string& layerName) {
    const size_t dot = layerName.rfind('.');
    return dot == std::string::npos ? layerName : layerName.substr(dot + 1);
}

} // namespace qs
