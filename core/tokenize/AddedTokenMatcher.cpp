#include "tokenize/AddedTokenMatcher.h"

#include "tokenize/Utf8.h"

#include <QChar>

#include <algorithm>

namespace qs {

namespace {

bool isWordChar(char32_t c) {
    return c == U'_' || QChar::isLetterOrNumber(c) || QChar::isMark(c);
}

// The last code point of `text` (which ends at a code point boundary), or 0 if empty.
char32_t lastCodePoint(std::string_view text) {
    if (text.empty())
        return 0;
    size_t i = text.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80)
        --i;
    const auto cps = utf8::decode(text.substr(i));
    return cps.empty() ? 0 : cps.front().value;
}

char32_t firstCodePoint(std::string_view text) {
    const auto cps = utf8::decode(text.substr(0, std::min<size_t>(4, text.size())));
    return cps.empty() ? 0 : cps.front().value;
}

} // namespace

void AddedTokenMatcher::add(const AddedToken& token) {
    if (token.content.empty())
        return;
    m_tokens.push_back(token);
    auto& bucket = m_byFirstByte[static_cast<unsigned char>(token.content[0])];
    // Longest first, so the first hit at a position is the leftmost-longest match; equal lengths
    // keep their order. Inserting in place (not re-sorting the bucket per token, which made a
    // tokenizer with many added tokens quadratic-log to load) moves at most the longer tokens.
    const size_t length = token.content.size();
    const auto at =
        std::upper_bound(bucket.begin(), bucket.end(), length, [this](size_t len, size_t index) {
            return len > m_tokens[index].content.size();
        });
    bucket.insert(at, m_tokens.size() - 1);
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text) const {
    std::vector<Segment> out;
    size_t textStart = 0; // start of the pending ordinary text
    size_t pos = 0;
    while (pos < text.size()) {
        const auto& bucket = m_byFirstByte[static_cast<unsigned char>(text[pos])];
        const AddedToken* hit = nullptr;
        for (size_t index : bucket) {
            const AddedToken& t = m_tokens[index];
            if (text.compare(pos, t.content.size(), t.content) == 0) {
                hit = &t;
                break;
            }
        }
        if (!hit) {
            ++pos;
            continue;
        }
        size_t start = pos;
        size_t stop = pos + hit->content.size();
        pos = stop; // a discarded match still consumes its text, as the Aho-Corasick scan does
        if (hit->singleWord) {
            const bool spaceBefore =
                start == 0 || !isWordChar(lastCodePoint(text.substr(0, start)));
            const bool spaceAfter =
                stop == text.size() || !isWordChar(firstCodePoint(text.substr(stop)));
            if (!spaceBefore || !spaceAfter)
                continue;
        }
        if (hit->lstrip) {
            while (start > textStart) {
                const std::string_view before = text.substr(textStart, start - textStart);
                const char32_t c = lastCodePoint(before);
                if (!QChar::isSpace(c))
                    break;
                start -= utf8::encode(c).size();
            }
        }
        if (hit->rstrip) {
            while (stop < text.size()) {
                const char32_t c = firstCodePoint(text.substr(stop));
                if (!QChar::isSpace(c))
                    break;
                stop += utf8::encode(c).size();
            }
            pos = stop;
        }
        if (start > textStart)
            out.push_back({textStart, start, -1});
        out.push_back({start, stop, hit->id});
        textStart = stop;
    }
    if (textStart < text.size())
        out.push_back({textStart, text.size(), -1});
    return out;
}

} // namespace qs
