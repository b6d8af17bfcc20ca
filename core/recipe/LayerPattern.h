// Layer name patterns as recipes, Quark and the CLI write them.
//
// - "re:<regex>": an ECMAScript regular expression that must match the WHOLE name (as
//   std::regex_match would). vLLM matches "re:" exclusions with Python's re.match, which anchors
//   only at the start; write an explicit ".*" suffix where a prefix match is meant. Matched by a
//   linear-time automaton (time O(name length x pattern size), no recursion), so a hostile
//   pattern such as "re:(a+)+$" cannot hang or overflow the stack. Supported: literals, '.',
//   escapes (\d \w \s \D \W \S \n \t \xHH, escaped punctuation), classes "[a-z_]" "[^0-9]",
//   groups "( )" "(?: )", '|', quantifiers * + ? {m} {m,} {m,n} (lazy forms accepted), ^ $ \b \B.
//   Refused by name: backreferences, lookahead/lookbehind, named groups, POSIX [[:classes:]],
//   stacked quantifiers ("a**"). Limits: 4096 characters per pattern, groups nested 64 deep,
//   counts in {m,n} up to 1000, 10000 automaton states.
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

// Throws qs::Error(source, field, reason) for an empty or over-long pattern, or an "re:" pattern
// that does not compile (the reason says why and where, naming the limit when one is hit).
void validateLayerPattern(const std::string& pattern, const std::string& source,
                          const std::string& field);

bool isRegexPattern(const std::string& pattern);
// True when an fnmatch pattern has no wildcard, i.e. names exactly one layer.
bool isExactLayerName(const std::string& pattern);
// An fnmatch pattern matching exactly `layerName` and nothing else: '[', '?' and '*' are
// escaped as "[[]", "[?]", "[*]" (a ']' outside a set is literal already), and a leading "re:"
// as "[r]e:" so the result is never read as a regular expression. The one way the GUI,
// the CLI and sensitivity runs name a single layer.
std::string exactLayerPattern(const std::string& layerName);
// The last dotted component of a layer name: the linear kind our model code assigns
// ("model.layers.0.mlp.down_proj" -> "down_proj").
std::string layerKindOf(const std::string& layerName);

} // namespace qs
