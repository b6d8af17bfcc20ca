#include "tokenize/HfPreTokenizer.h"

#include "tokenize/HfJson.h"
#include "tokenize/Utf8.h"

#include <QChar>

#include <algorithm>
#include <unordered_map>

namespace qs {

namespace {

struct Span {
    size_t begin;
    size_t end;
    bool isMatch;
};

// Turns sorted, non-overlapping matches into spans that tile [0, size).
std::vector<Span> tile(const std::vector<std::pair<size_t, size_t>>& matches, size_t size) {
    std::vector<Span> spans;
    size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (b > prev)
            spans.push_back({prev, b, false});
        spans.push_back({b, e, true});
        prev = e;
    }
    if (prev < size)
        spans.push_back({prev, size, false});
    return spans;
}

// Hugging Face's NormalizedString::split: which spans become pieces, merged how.
std::vector<std::pair<size_t, size_t>>
applyBehavior(std::vector<Span> spans, HfPreTokenizer::Behavior behavior, bool invert) {
    using B = HfPreTokenizer::Behavior;
    if (invert) {
        for (Span& s : spans)
            s.isMatch = !s.isMatch;
    }
    std::vector<std::pair<size_t, size_t>> out;
    switch (behavior) {
    case B::Isolated:
        for (const Span& s : spans)
            out.emplace_back(s.begin, s.end);
        break;
    case B::Removed:
        for (const Span& s : spans) {
            if (!s.isMatch)
                out.emplace_back(s.begin, s.end);
        }
        break;
    case B::Contiguous: {
        bool previous = false;
        for (const Span& s : spans) {
            if (!out.empty() && s.isMatch == previous)
                out.back().second = s.end;
            else
                out.emplace_back(s.begin, s.end);
            previous = s.isMatch;
        }
        break;
    }
    case B::MergedWithPrevious: {
        bool previous = false;
        for (const Span& s : spans) {
            if (!out.empty() && s.isMatch && !previous)
                out.back().second = s.end;
            else
                out.emplace_back(s.begin, s.end);
            previous = s.isMatch;
        }
        break;
    }
    case B::MergedWithNext: {
        bool previous = false;
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
            if (!out.empty() && it->isMatch && !previous)
                out.back().first = it->begin;
            else
                out.emplace_back(it->begin, it->end);
            previous = it->isMatch;
        }
        std::reverse(out.begin(), out.end());
        break;
    }
    }
    return out;
}

std::vector<std::pair<size_t, size_t>> findLiteral(const std::string& text,
                                                   const std::string& needle) {
    std::vector<std::pair<size_t, size_t>> matches;
    if (needle.empty())
        return matches;
    for (size_t pos = text.find(needle); pos != std::string::npos;
         pos = text.find(needle, pos + needle.size()))
        matches.emplace_back(pos, pos + needle.size());
    return matches;
}

HfPreTokenizer::Behavior parseBehavior(const std::string& name, const std::string& source,
                                       const std::string& field) {
    using B = HfPreTokenizer::Behavior;
    if (name == "Removed")
        return B::Removed;
    if (name == "Isolated")
        return B::Isolated;
    if (name == "MergedWithPrevious")
        return B::MergedWithPrevious;
    if (name == "MergedWithNext")
        return B::MergedWithNext;
    if (name == "Contiguous")
        return B::Contiguous;
    throw Error(source, field, "unknown split behavior '" + name + "'");
}

void pushPieces(const PreToken& piece, const std::vector<std::pair<size_t, size_t>>& ranges,
                std::vector<PreToken>& out) {
    for (const auto& [b, e] : ranges) {
        if (e > b)
            out.push_back({piece.text.substr(b, e - b), piece.atInputStart && b == 0});
    }
}

} // namespace

const std::array<std::string, 256>& HfPreTokenizer::byteToUnicode() {
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> t;
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            t[static_cast<size_t>(b)] = utf8::encode(printable ? static_cast<char32_t>(b)
                                                               : static_cast<char32_t>(256 + n++));
        }
        return t;
    }();
    return table;
}

int HfPreTokenizer::unicodeToByte(char32_t c) {
    static const std::unordered_map<char32_t, int> inverse = [] {
        std::unordered_map<char32_t, int> m;
        const auto& t = byteToUnicode();
        for (int b = 0; b < 256; ++b)
            m[utf8::decode(t[static_cast<size_t>(b)]).front().value] = b;
        return m;
    }();
    const auto it = inverse.find(c);
    return it == inverse.end() ? -1 : it->second;
}

HfPreTokenizer HfPreTokenizer::fromJson(const nlohmann::json& node, const std::string& source,
                                        const std::string& field) {
    HfPreTokenizer p;
    if (!node.is_null()) {
        p.parse(node, source, field);
        hfjson::checkStepCount(p.m_steps.size(), source, field);
    }
    return p;
}

HfPreTokenizer HfPreTokenizer::gpt2ByteLevel() {
    HfPreTokenizer p;
    Step s{Kind::ByteLevel};
    s.addPrefixSpace = false;
    s.useRegex = true;
    p.m_steps.push_back(s);
    p.m_byteLevel = true;
    return p;
}

void HfPreTokenizer::parse(const nlohmann::json& node, const std::string& source,
                           const std::string& field) {
    const std::string type = hfjson::typeOf(node, source, field);
    if (type == "Sequence") {
        const auto& list = hfjson::member(node, "pretokenizers", source, field);
        if (!list.is_array())
            throw Error(source, field + ".pretokenizers", "expected an array");
        for (size_t i = 0; i < list.size(); ++i)
            parse(list[i], source, field + ".pretokenizers[" + std::to_string(i) + "]");
    } else if (type == "ByteLevel") {
        Step s{Kind::ByteLevel};
        s.addPrefixSpace = hfjson::boolOr(node, "add_prefix_space", true, source, field);
        s.useRegex = hfjson::boolOr(node, "use_regex", true, source, field);
        m_steps.push_back(s);
        m_byteLevel = true;
    } else if (type == "Split") {
        const auto p = hfjson::pattern(node, source, field);
        Step s{p.isRegex ? Kind::SplitRegex : Kind::SplitString};
        if (p.isRegex) {
            const auto known = recognizePreTokenPattern(p.text);
            if (!known)
                throw Error(source, field + ".pattern.Regex",
                            "unsupported split regex (only the GPT-2, Llama-3 and Qwen2 "
                            "patterns are implemented): " +
                                p.text);
            s.pattern = *known;
        } else {
            s.literal = p.text;
        }
        s.behavior = parseBehavior(hfjson::stringOr(node, "behavior", "Isolated", source, field),
                                   source, field + ".behavior");
        s.invert = hfjson::boolOr(node, "invert", false, source, field);
        m_steps.push_back(s);
    } else if (type == "Metaspace") {
        Step s{Kind::Metaspace};
        s.literal = hfjson::stringOr(node, "replacement", "\xE2\x96\x81", source, field);
        if (utf8::decode(s.literal).size() != 1)
            throw Error(source, field + ".replacement", "expected one character");
        const std::string scheme = hfjson::stringOr(node, "prepend_scheme", "", source, field);
        if (scheme == "first")
            s.prepend = Prepend::First;
        else if (scheme == "never")
            s.prepend = Prepend::Never;
        else if (scheme == "always")
            s.prepend = Prepend::Always;
        else if (scheme.empty())
            s.prepend = hfjson::boolOr(node, "add_prefix_space", true, source, field)
                            ? Prepend::Always
                            : Prepend::Never;
        else
            throw Error(source, field + ".prepend_scheme", "unknown scheme '" + scheme + "'");
        s.split = hfjson::boolOr(node, "split", true, source, field);
        m_steps.push_back(s);
    } else if (type == "Digits") {
        Step s{Kind::Digits};
        s.split = hfjson::boolOr(node, "individual_digits", false, source, field);
        m_steps.push_back(s);
    } else {
        throw Error(source, field + ".type", "unsupported pre-tokenizer '" + type + "'");
    }
}

std::vector<PreToken> HfPreTokenizer::apply(std::vector<PreToken> pieces) const {
    for (const Step& step : m_steps) {
        std::vector<PreToken> next;
        next.reserve(pieces.size() * 2);
        for (PreToken& piece : pieces)
            applyStep(step, std::move(piece), next);
        pieces.swap(next);
    }
    return pieces;
}

void HfPreTokenizer::applyStep(const Step& step, PreToken piece, std::vector<PreToken>& out) const {
    switch (step.kind) {
    case Kind::ByteLevel: {
        if (step.addPrefixSpace && (piece.text.empty() || piece.text[0] != ' '))
            piece.text.insert(0, " ");
        std::vector<PreToken> parts;
        if (step.useRegex)
            pushPieces(piece, scanPreTokens(PreTokenPattern::Gpt2, piece.text), parts);
        else
            parts.push_back(std::move(piece));
        const auto& map = byteToUnicode();
        for (PreToken& part : parts) {
            std::string mapped;
            mapped.reserve(part.text.size() * 2);
            for (unsigned char b : part.text)
                mapped += map[b];
            out.push_back({std::move(mapped), part.atInputStart});
        }
        break;
    }
    case Kind::SplitRegex:
        pushPieces(piece,
                   applyBehavior(tile(scanPreTokens(step.pattern, piece.text), piece.text.size()),
                                 step.behavior, step.invert),
                   out);
        break;
    case Kind::SplitString:
        pushPieces(piece,
                   applyBehavior(tile(findLiteral(piece.text, step.literal), piece.text.size()),
                                 step.behavior, step.invert),
                   out);
        break;
    case Kind::Metaspace: {
        std::string text;
        text.reserve(piece.text.size() + 8);
        for (char c : piece.text) {
            if (c == ' ')
                text += step.literal;
            else
                text += c;
        }
        const bool startsWith = text.compare(0, step.literal.size(), step.literal) == 0;
        if (!startsWith && (step.prepend == Prepend::Always ||
                            (step.prepend == Prepend::First && piece.atInputStart)))
            text.insert(0, step.literal);
        piece.text = std::move(text);
        if (step.split)
            pushPieces(piece,
                       applyBehavior(tile(findLiteral(piece.text, step.literal), piece.text.size()),
                                     Behavior::MergedWithNext, false),
                       out);
        else if (!piece.text.empty())
            out.push_back(std::move(piece));
        break;
    }
    case Kind::Digits: {
        std::vector<std::pair<size_t, size_t>> matches;
        const auto cps = utf8::decode(piece.text);
        for (size_t i = 0; i < cps.size();) {
            if (!QChar::isNumber(cps[i].value)) {
                ++i;
                continue;
            }
            size_t j = i + 1;
            while (!step.split && j < cps.size() && QChar::isNumber(cps[j].value))
                ++j;
            matches.emplace_back(cps[i].offset, j < cps.size() ? cps[j].offset : piece.text.size());
            i = j;
        }
        pushPieces(piece,
                   applyBehavior(tile(matches, piece.text.size()), Behavior::Isolated, false), out);
        break;
    }
    }
}

} // namespace qs
