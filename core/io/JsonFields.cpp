#include "io/JsonFields.h"

#include "util/Error.h"

#include <QFile>

#include <cmath>

namespace qs {

JsonFields::JsonFields(const nlohmann::json& object, std::string source)
    : m_object(object), m_source(std::move(source)) {
    if (!m_object.is_object())
        throw Error(m_source, "", "expected a JSON object");
}

bool JsonFields::has(const std::string& key) const {
    auto it = m_object.find(key);
    return it != m_object.end() && !it->is_null();
}

const nlohmann::json& JsonFields::value(const std::string& key) const {
    auto it = m_object.find(key);
    if (it == m_object.end() || it->is_null())
        throw Error(m_source, key, "missing required field");
    return *it;
}

int64_t JsonFields::toInt(const std::string& key, const nlohmann::json& v, int64_t min,
                          int64_t max) const {
    int64_t n = 0;
    if (v.is_number_integer()) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
            throw Error(m_source, key, "integer out of range");
        n = v.get<int64_t>();
    } else if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15)
            throw Error(m_source, key, "expected an integer, got " + v.dump());
        n = int64_t(d);
    } else {
        throw Error(m_source, key, "expected an integer, got " + v.dump());
    }
    if (n < min || n > max)
        throw Error(m_source, key,
                    "value " + std::to_string(n) + " outside [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]");
    return n;
}

double JsonFields::toDouble(const std::string& key, const nlohmann::json& v, double min,
                            double max) const {
    if (!v.is_number())
        throw Error(m_source, key, "expected a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < min || d > max)
        throw Error(m_source, key, "value " + v.dump() + " outside the valid range");
    return d;
}

int64_t JsonFields::requiredInt(const std::string& key, int64_t min, int64_t max) const {
    return toInt(key, value(key), min, max);
}

int64_t JsonFields::optionalInt(const std::string& key, int64_t fallback, int64_t min,
                                int64_t max) const {
    return has(key) ? toInt(key, value(key), min, max) : fallback;
}

double JsonFields::requiredDouble(const std::string& key, double min, double max) const {
    return toDouble(key, value(key), min, max);
}

double JsonFields::optionalDouble(const std::string& key, double fallback, double min,
                                  double max) const {
    return has(key) ? toDouble(key, value(key), min, max) : fallback;
}

bool JsonFields::optionalBool(const std::string& key, bool fallback) const {
    if (!has(key))
        return fallback;
    const nlohmann::json& v = value(key);
    if (!v.is_boolean())
        throw Error(m_source, key, "expected true or false, got " + v.dump());
    return v.get<bool>();
}

std::string JsonFields::requiredString(const std::string& key) const {
    const nlohmann::json& v = value(key);
    if (!v.is_string())
        throw Error(m_source, key, "expected a string, got " + v.dump());
    return v.get<std::string>();
}

std::string JsonFields::optionalString(const std::string& key, const std::string& fallback) const {
    return has(key) ? requiredString(key) : fallback;
}

nlohmann::json parseJsonText(const std::string& text, const std::string& source) {
    if (text.size() > kMaxJsonDocumentBytes)
        throw Error(source, "",
                    "JSON document of " + std::to_string(text.size()) +
                        " bytes exceeds the limit of " + std::to_string(kMaxJsonDocumentBytes) +
                        " (kMaxJsonDocumentBytes)");
    // An empty file (a failed save, a touch) is named as such, not as parser error 101.
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw Error(source, "", "the file is empty: expected a JSON document");
    // The depth is checked while parsing: every reader after this one (and nlohmann's own
    // dump(), used in error messages) recurses per level.
    const auto limitDepth = [&source](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth)
            throw Error(source, "",
                        "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels (kMaxJsonDepth)");
        return true;
    };
    try {
        return nlohmann::json::parse(text, limitDepth);
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(source, "",
                    std::string("invalid JSON at byte ") + std::to_string(e.byte) + ": " +
                        e.what());
    } catch (const nlohmann::json::exception& e) {
        // e.g. out_of_range for a number like 1e400 that no double holds
        throw Error(source, "", std::string("invalid JSON: ") + e.what());
    }
}

std::string readTextFile(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.exists())
        throw Error(path, "", "file not found");
    if (!f.open(QIODevice::ReadOnly))
        throw Error(path, "", "cannot read: " + f.errorString().toStdString());
    const QByteArray bytes = f.readAll();
    return std::string(bytes.constData(), size_t(bytes.size()));
}

} // namespace qs
