#pragma once

#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace qs::hfjson {

// Limits on what a tokenizer file may ask for, each named in the error that enforces it. Real
// tokenizers stay far below them (Gemma 3's tokenizer.json, among the largest, is 33 MB with a
// vocabulary of 262k and nesting 6 deep); a hostile file must not make loading allocate
// gigabytes, recurse without bound or take minutes.
constexpr size_t kMaxJsonBytes = size_t(256) << 20; // a tokenizer / vocab / config file
constexpr int kMaxJsonDepth = 64;                   // nesting of arrays and objects
// Any token id: 16x the largest real vocabulary, and the vocabulary's id table (sized by the
// largest id) stays below 150 MB.
constexpr int64_t kMaxTokenId = (int64_t(1) << 22) - 1;
constexpr size_t kMaxMerges = size_t(1) << 24;
constexpr size_t kMaxAddedTokens = size_t(1) << 16;
constexpr size_t kMaxPipelineSteps = 256; // normalizer / pre-tokenizer / decoder steps

// Parses a whole JSON document read from `source`: syntax errors, numbers no double holds
// (1e400) and the limits above become qs::Error naming the file.
inline nlohmann::json parseDocument(const std::string& text, const std::string& source) {
    if (text.size() > kMaxJsonBytes)
        throw Error(source, "",
                    "file of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                        std::to_string(kMaxJsonBytes) + " (kMaxJsonBytes)");
    try {
        return nlohmann::json::parse(
            text, [&source](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
                if (depth > kMaxJsonDepth)
                    throw Error(source, "",
                                "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                    " levels (kMaxJsonDepth)");
                return true;
            });
    } catch (const nlohmann::json::exception& e) {
        // parse_error for syntax, out_of_range for a number like 1e400
        throw Error(source, "", std::string("not valid JSON: ") + e.what());
    }
}

// The bytes of file `path`, refused before reading when larger than kMaxJsonBytes. qs::Error
// names the file: cannot be opened (with the system's reason), too large, read failed.
inline std::string readBoundedFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(path, "", std::string("cannot open: ") + std::strerror(errno));
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size > std::streamoff(kMaxJsonBytes))
        throw Error(path, "",
                    "file of " + std::to_string(size) + " bytes exceeds the limit of " +
                        std::to_string(kMaxJsonBytes) + " (kMaxJsonBytes)");
    in.clear();
    in.seekg(0, std::ios::beg);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        throw Error(path, "", std::string("read failed: ") + std::strerror(errno));
    return text.str();
}

// The JSON document in `path`, nullopt when there is no such file; a file that is there but
// unreadable, too large or not JSON throws qs::Error naming it.
inline std::optional<nlohmann::json> readOptionalDocument(const std::string& path) {
    if (!std::ifstream(path, std::ios::binary))
        return std::nullopt;
    return parseDocument(readBoundedFile(path), path);
}

// A token id in [0, kMaxTokenId]; `node` must be an integer.
inline int32_t tokenId(const nlohmann::json& node, const std::string& source,
                       const std::string& field, const std::string& what) {
    const bool inRange = node.is_number_unsigned()
                             ? node.get<uint64_t>() <= uint64_t(kMaxTokenId)
                             : node.is_number_integer() && node.get<int64_t>() >= 0 &&
                                   node.get<int64_t>() <= kMaxTokenId;
    if (!inRange)
        throw Error(source, field,
                    what + " " + node.dump() + " outside [0, " + std::to_string(kMaxTokenId) +
                        "] (kMaxTokenId)");
    return static_cast<int32_t>(node.get<int64_t>());
}

// Refuses a pipeline (normalizer, pre-tokenizer, decoder) longer than kMaxPipelineSteps.
inline void checkStepCount(size_t steps, const std::string& source, const std::string& field) {
    if (steps > kMaxPipelineSteps)
        throw Error(source, field,
                    "more than " + std::to_string(kMaxPipelineSteps) +
                        " steps (kMaxPipelineSteps)");
}

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

// A non-negative integer no larger than `max`, or `fallback` when absent or null.
inline size_t countOr(const nlohmann::json& node, const char* key, size_t fallback, size_t max,
                      const std::string& source, const std::string& field) {
    if (!node.is_object() || !node.contains(key) || node.at(key).is_null())
        return fallback;
    const nlohmann::json& v = node.at(key);
    const bool inRange = v.is_number_unsigned() ? v.get<uint64_t>() <= max
                                                : v.is_number_integer() && v.get<int64_t>() >= 0 &&
                                                      uint64_t(v.get<int64_t>()) <= max;
    if (!inRange)
        throw Error(source, join(field, key),
                    "expected an integer in [0, " + std::to_string(max) + "], got " + v.dump());
    return size_t(v.get<uint64_t>());
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
