#pragma once

#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <string>

namespace qs::hfjson {

inline std::string join(const std::string& field, const char* key) {
    return field.empty() ? std::string(key) : field + "." + key;
}

// Small accessors for tokenizer.json nodes that turn type mismatches into qs::Error naming the
// file and the field instead of nlohmann's generic exceptions.

inline const nlohmann::json& member(const nlohmann::json& node, const char* key,
                                    const std::string& source, const std::string& field) {
    if (!node.is_object() || !node.contains(key))
        throw Error(source, join(field, key), "missing");
    return node.at(key);
}

inline std::string stringOr(const nlohmann::json& node, const char* key,
                            const std::string& fallback, const std::string& source,
                            const std::string& field) {
    if (!node.is_object() || !node.contains(key) || node.at(key).is_null())
        return fallback;
    if (!node.at(key).is_string())
        throw Error(source, join(field, key), "expected a string");
    return node.at(key).get<std::string>();
}

inline bool boolOr(const nlohmann::json& node, const char* key, bool fallback,
                   const std::string& source, const std::string& field) {
    if (!node.is_object() || !node.contains(key) || node.at(key).is_null())
        return fallback;
    if (!node.at(key).is_boolean())
        throw Error(source, join(field, key), "expected true or false");
    return node.at(key).get<bool>();
}

inline std::string typeOf(const nlohmann::json& node, const std::string& source,
                          const std::string& field) {
    if (!node.is_object())
        throw Error(source, field, "expected an object");
    const auto it = node.find("type");
    if (it == node.end() || !it->is_string())
        throw Error(source, join(field, "type"), "missing or not a string");
    return it->get<std::string>();
}

// A Replace/Split "pattern": {"String": "..."} is supported, {"Regex": "..."} is returned with
// isRegex set so the caller can decide.
struct Pattern {
    std::string text;
    bool isRegex = false;
};

inline Pattern pattern(const nlohmann::json& node, const std::string& source,
                       const std::string& field) {
    const auto& p = member(node, "pattern", source, field);
    if (p.is_object() && p.contains("String") && p.at("String").is_string())
        return {p.at("String").get<std::string>(), false};
    if (p.is_object() && p.contains("Regex") && p.at("Regex").is_string())
        return {p.at("Regex").get<std::string>(), true};
    throw Error(source, join(field, "pattern"), "expected {\"String\": ...} or {\"Regex\": ...}");
}

} // namespace qs::hfjson
