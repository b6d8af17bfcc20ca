#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace qs {

// Typed, strict access to fields of a JSON object read from `source`. Every failure throws
// qs::Error(source, field, reason) so messages point at the exact field.
class JsonFields {
public:
    JsonFields(const nlohmann::json& object, std::string source);

    bool has(const std::string& key) const; // present and not null
    int64_t requiredInt(const std::string& key, int64_t min, int64_t max) const;
    int64_t optionalInt(const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
    double requiredDouble(const std::string& key, double min, double max) const;
    double optionalDouble(const std::string& key, double fallback, double min, double max) const;
    bool optionalBool(const std::string& key, bool fallback) const;
    std::string requiredString(const std::string& key) const;
    std::string optionalString(const std::string& key, const std::string& fallback) const;
    const nlohmann::json& object() const { return m_object; }
    const std::string& source() const { return m_source; }

private:
    const nlohmann::json& value(const std::string& key) const;
    int64_t toInt(const std::string& key, const nlohmann::json& v, int64_t min, int64_t max) const;
    double toDouble(const std::string& key, const nlohmann::json& v, double min, double max) const;

    const nlohmann::json& m_object;
    std::string m_source;
};

// Limits of parseJsonText, named in its errors. The documents it reads (config.json, recipes,
// Quark configs, checkpoint indexes) are kilobytes and nest fewer than 10 levels.
constexpr size_t kMaxJsonDocumentBytes = size_t(64) << 20;
constexpr int kMaxJsonDepth = 64;

// Parses a JSON document; a syntax error becomes qs::Error naming `source` and the byte offset,
// and so does a document over kMaxJsonDocumentBytes or nested deeper than kMaxJsonDepth.
nlohmann::json parseJsonText(const std::string& text, const std::string& source);
// Reads a whole file (qs::Error when missing or unreadable).
std::string readTextFile(const std::string& path);

} // namespace qs
