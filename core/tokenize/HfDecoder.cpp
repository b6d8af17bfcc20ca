#include "tokenize/HfDecoder.h"

#include "tokenize/HfJson.h"
#include "tokenize/HfPreTokenizer.h"
#include "tokenize/Utf8.h"

namespace qs {

namespace {

const std::string kReplacementChar = "\xEF\xBF\xBD"; // U+FFFD

std::string replaceAll(const std::string& text, const std::string& from, const std::string& to) {
    if (from.empty())
        return text;
    std::string out;
    size_t pos = 0;
    for (size_t hit = text.find(from); hit != std::string::npos; hit = text.find(from, pos)) {
        out.append(text, pos, hit - pos);
        out += to;
        pos = hit + from.size();
    }
    out.append(text, pos, std::string::npos);
    return out;
}

// "<0xNN>" → NN, else -1.
int byteToken(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>')
        return -1;
    auto hex = [](char c) {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

} // namespace

HfDecoder HfDecoder::fromJson(const nlohmann::json& node, const std::string& source,
                              const std::string& field) {
    HfDecoder d;
    if (!node.is_null()) {
        d.m_none = false;
        d.parse(node, source, field);
        hfjson::checkStepCount(d.m_steps.size(), source, field);
    }
    return d;
}

HfDecoder HfDecoder::byteLevel() {
    HfDecoder d;
    d.m_none = false;
    d.m_steps.push_back({Kind::ByteLevel});
    return d;
}

void HfDecoder::parse(const nlohmann::json& node, const std::string& source,
                      const std::string& field) {
    const std::string type = hfjson::typeOf(node, source, field);
    if (type == "Sequence") {
        const auto& list = hfjson::member(node, "decoders", source, field);
        if (!list.is_array())
            throw Error(source, field + ".decoders", "expected an array");
        for (size_t i = 0; i < list.size(); ++i)
            parse(list[i], source, field + ".decoders[" + std::to_string(i) + "]");
    } else if (type == "ByteLevel") {
        m_steps.push_back({Kind::ByteLevel});
    } else if (type == "Replace") {
        const auto p = hfjson::pattern(node, source, field);
        if (p.isRegex)
            throw Error(source, field + ".pattern", "regex Replace decoders are not supported");
        m_steps.push_back(
            {Kind::Replace, p.text, hfjson::stringOr(node, "content", "", source, field)});
    } else if (type == "ByteFallback") {
        m_steps.push_back({Kind::ByteFallback});
    } else if (type == "Fuse") {
        m_steps.push_back({Kind::Fuse});
    } else if (type == "Strip") {
        Step s{Kind::Strip, hfjson::stringOr(node, "content", " ", source, field)};
        if (utf8::decode(s.a).size() != 1)
            throw Error(source, field + ".content", "expected one character");
        // Counts of characters; node.value() threw nlohmann's type_error for a non-number
        // (found by fuzz_tokenizer_json).
        s.start = hfjson::countOr(node, "start", 0, 1 << 20, source, field);
        s.stop = hfjson::countOr(node, "stop", 0, 1 << 20, source, field);
        m_steps.push_back(s);
    } else if (type == "Metaspace") {
        Step s{Kind::Metaspace,
               hfjson::stringOr(node, "replacement", "\xE2\x96\x81", source, field)};
        const std::string scheme = hfjson::stringOr(node, "prepend_scheme", "", source, field);
        s.prependNever =
            scheme == "never" ||
            (scheme.empty() && !hfjson::boolOr(node, "add_prefix_space", true, source, field));
        m_steps.push_back(s);
    } else {
        throw Error(source, field + ".type", "unsupported decoder '" + type + "'");
    }
}

std::vector<std::string> HfDecoder::applyStep(const Step& step, std::vector<std::string> tokens) {
    switch (step.kind) {
    case Kind::ByteLevel: {
        // A token with a character outside the byte map contributes its own UTF-8 bytes.
        std::string bytes;
        for (const std::string& t : tokens) {
            std::string tokenBytes;
            bool mapped = true;
            for (const auto& cp : utf8::decode(t)) {
                const int b = HfPreTokenizer::unicodeToByte(cp.value);
                if (b < 0) {
                    mapped = false;
                    break;
                }
                tokenBytes += static_cast<char>(b);
            }
            bytes += mapped ? tokenBytes : t;
        }
        return {utf8::toValidLossy(bytes)};
    }
    case Kind::Replace:
        for (std::string& t : tokens)
            t = replaceAll(t, step.a, step.b);
        return tokens;
    case Kind::ByteFallback: {
        // A run of <0xNN> tokens becomes its UTF-8 text, or one U+FFFD per byte when invalid.
        std::vector<std::string> out;
        std::string pending;
        size_t pendingCount = 0;
        auto flush = [&] {
            if (pendingCount == 0)
                return;
            if (utf8::isValid(pending)) {
                out.push_back(pending);
            } else {
                for (size_t i = 0; i < pendingCount; ++i)
                    out.push_back(kReplacementChar);
            }
            pending.clear();
            pendingCount = 0;
        };
        for (std::string& t : tokens) {
            const int b = byteToken(t);
            if (b >= 0) {
                pending += static_cast<char>(b);
                ++pendingCount;
            } else {
                flush();
                out.push_back(std::move(t));
            }
        }
        flush();
        return out;
    }
    case Kind::Fuse: {
        std::string all;
        for (const std::string& t : tokens)
            all += t;
        return {all};
    }
    case Kind::Strip:
        for (std::string& t : tokens) {
            auto cps = utf8::decode(t);
            const char32_t content = utf8::decode(step.a).front().value;
            size_t b = 0, e = cps.size();
            while (b < step.start && b < e && cps[b].value == content)
                ++b;
            size_t cut = 0;
            while (cut < step.stop && e > b && cps[e - 1].value == content) {
                --e;
                ++cut;
            }
            const size_t from = b < cps.size() ? cps[b].offset : t.size();
            const size_t to = e < cps.size() ? cps[e].offset : t.size();
            t = t.substr(from, to > from ? to - from : 0);
        }
        return tokens;
    case Kind::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
            // As in Hugging Face, the first token loses every replacement character (the
            // prepended one), later ones turn them into spaces.
            const std::string to = (i == 0 && !step.prependNever) ? "" : " ";
            tokens[i] = replaceAll(tokens[i], step.a, to);
        }
        return tokens;
    }
    return tokens;
}

std::string HfDecoder::decode(std::vector<std::string> tokens) const {
    if (m_none) {
        std::string joined;
        for (size_t i = 0; i < tokens.size(); ++i)
            joined += (i ? " " : "") + tokens[i];
        return joined;
    }
    for (const Step& step : m_steps)
        tokens = applyStep(step, std::move(tokens));
    std::string out;
    for (const std::string& t : tokens)
        out += t;
    return out;
}

} // namespace qs
