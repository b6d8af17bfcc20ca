// Layer name patterns as recipes, Quark and the CLI write them.
//
// - "re:<regex>": an ECMAScript regular expression that must match the WHOLE name
//   (std::regex_match). vLLM matches "re:" exclusions with Python's re.match, which anchors only
//   at the start; write an explicit ".*" suffix where a prefix match is meant.
// - anything else: fnmatch over the full name, as Quark's CLI and Quark's own layer matching use
//   it (Python fnmatch.fnmatchcase): '*' matches any run of characters including dots, '?' one
//   character, "[abc]" / "[a-z]" / "[!abc]" one character of (not of) the set; a '[' without a
//   closing ']' is a literal '['. Case-sensitive. A pattern without any of "*?[" matches exactly
//   one name.
//   Examples: "lm_head", "*down_proj", "*layers.0.mlp.down_proj", "model.layers.1[0-5].*".
#pragma once

#include <string>

namespace qs {

bool matchesLayerPattern(const std::string& pattern, const std::string& name);

// Throws qs::Error(source, field, reason) for an empty pattern or an "re:" pattern whose regex
// does not compile (the reason carries the regex engine's message).
void validateLayerPattern(const std::string& pattern, const std::string& source,
                          const std::string& field);

bool isRegexPattern(const std::string& pattern);
// True when an fnmatch pattern has no wildcard, i.e. names exactly one layer.
bool isExactLayerName(const std::string& pattern);
// The last dotted component of a layer name: the linear kind our model code assigns
// ("model.layers.0.mlp.down_proj" -> "down_proj").
std::string layerKindOf(const std::string& layerName);

} // namespace qs
