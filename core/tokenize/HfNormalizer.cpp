#include "tokenize/HfNormalizer.h"

#include "tokenize/HfJson.h"
#include "tokenize/Utf8.h"

#include <QString>

namespace qs {

namespace {

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
    if (from.empty())
        return;
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    size_t pos = 0;
    while (true) {
        const size_t hit = text.find(from, pos);
        if (hit == std::string::npos)
            break;
        out.append(text, pos, hit - pos);
        out += to;
        pos = hit + from.size();
    }
    out.append(text, pos, std::string::npos);
    text.swap(out);
}

// UTF-8 <-> QString by hand: Qt's UTF-8 and UTF-32 decoders drop a leading U+FEFF as a byte
// order mark, which would silently delete a character Hugging Face keeps.
QString toQString(const std::string& text) {
    QString out;
    out.reserve(static_cast<qsizetype>(text.size()));
    for (const auto& cp : utf8::decode(text)) {
        if (QChar::requiresSurrogates(cp.value)) {
            out += QChar(QChar::highSurrogate(cp.value));
            out += QChar(QChar::lowSurrogate(cp.value));
        } else {
            out += QChar(static_cast<char16_t>(cp.value));
        }
    }
    return out;
}

std::string toStdString(const QString& text) {
    std::string out;
    out.reserve(static_cast<size_t>(text.size()));
    for (qsizetype i = 0; i < text.size(); ++i) {
        char32_t c = text.at(i).unicode();
        if (QChar::isHighSurrogate(c) && i + 1 < text.size() && text.at(i + 1).isLowSurrogate()) {
            c = QChar::surrogateToUcs4(text.at(i).unicode(), text.at(i + 1).unicode());
            ++i;
        }
        utf8::append(out, c);
    }
    return out;
}

std::string normalizeForm(const std::string& text, QString::NormalizationForm form) {
    return toStdString(toQString(text).normalized(form));
}

} // namespace

HfNormalizer HfNormalizer::fromJson(const nlohmann::json& node, const std::string& source,
                                    const std::string& field) {
    HfNormalizer n;
    if (!node.is_null()) {
        n.parse(node, source, field);
        hfjson::checkStepCount(n.m_steps.size(), source, field);
    }
    return n;
}

void HfNormalizer::parse(const nlohmann::json& node, const std::string& source,
                         const std::string& field) {
    const std::string type = hfjson::typeOf(node, source, field);
    if (type == "Sequence") {
        const auto& list = hfjson::member(node, "normalizers", source, field);
        if (!list.is_array())
            throw Error(source, field + ".normalizers", "expected an array");
        for (size_t i = 0; i < list.size(); ++i)
            parse(list[i], source, field + ".normalizers[" + std::to_string(i) + "]");
    } else if (type == "Prepend") {
        m_steps.push_back(
            {Kind::Prepend, hfjson::stringOr(node, "prepend", "", source, field), ""});
    } else if (type == "Replace") {
        const auto p = hfjson::pattern(node, source, field);
        if (p.isRegex)
            throw Error(source, field + ".pattern", "regex Replace normalizers are not supported");
        m_steps.push_back(
            {Kind::Replace, p.text, hfjson::stringOr(node, "content", "", source, field)});
    } else if (type == "NFC") {
        m_steps.push_back({Kind::Nfc, "", ""});
    } else if (type == "NFD") {
        m_steps.push_back({Kind::Nfd, "", ""});
    } else if (type == "NFKC") {
        m_steps.push_back({Kind::Nfkc, "", ""});
    } else if (type == "NFKD") {
        m_steps.push_back({Kind::Nfkd, "", ""});
    } else if (type == "Lowercase") {
        m_steps.push_back({Kind::Lowercase, "", ""});
    } else if (type == "Strip") {
        Step s{Kind::Strip, "", ""};
        s.left = hfjson::boolOr(node, "strip_left", true, source, field);
        s.right = hfjson::boolOr(node, "strip_right", true, source, field);
        m_steps.push_back(s);
    } else {
        throw Error(source, field + ".type", "unsupported normalizer '" + type + "'");
    }
}

std::string HfNormalizer::apply(std::string text) const {
    for (const Step& s : m_steps) {
        switch (s.kind) {
        case Kind::Prepend:
            if (!text.empty())
                text.insert(0, s.a);
            break;
        case Kind::Replace:
            replaceAll(text, s.a, s.b);
            break;
        case Kind::Nfc:
            text = normalizeForm(text, QString::NormalizationForm_C);
            break;
        case Kind::Nfd:
            text = normalizeForm(text, QString::NormalizationForm_D);
            break;
        case Kind::Nfkc:
            text = normalizeForm(text, QString::NormalizationForm_KC);
            break;
        case Kind::Nfkd:
            text = normalizeForm(text, QString::NormalizationForm_KD);
            break;
        case Kind::Lowercase:
            text = toStdString(toQString(text).toLower());
            break;
        case Kind::Strip: {
            const QString q = toQString(text);
            qsizetype b = 0, e = q.size();
            while (s.left && b < e && q.at(b).isSpace())
                ++b;
            while (s.right && e > b && q.at(e - 1).isSpace())
                --e;
            text = toStdString(q.mid(b, e - b));
            break;
        }
        }
    }
    return text;
}

} // namespace qs
