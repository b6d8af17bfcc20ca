// libFuzzer target: a layer pattern (first line) and layer names (one per further line), as a
// recipe's exclude/override patterns meet a model's layers. Drives validateLayerPattern and
// matchesLayerPattern (fnmatch and the "re:" automaton), and checks:
//   - every match returns promptly: a pattern cannot hang or recurse (libFuzzer's -timeout and
//     the sanitizers' stack checks report it);
//   - differential: for short ASCII inputs, an "re:" pattern that both our engine and
//     std::regex accept gives the same full-match answer (std::regex is the documented
//     semantics; it is only safe to run on short names and patterns without {m,n});
//   - exactLayerPattern(name) matches that name.
// A finding is a crash, a sanitizer report, an exception other than qs::Error, or a broken check
// (__builtin_trap).
#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace {

bool isShortAscii(const std::string& s, size_t limit) {
    if (s.size() > limit)
        return false;
    for (const char c : s)
        if (static_cast<unsigned char>(c) >= 0x80 || c == 0)
            return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> lines;
    for (size_t begin = 0;;) {
        const size_t nl = input.find('\n', begin);
        lines.push_back(input.substr(begin, nl == std::string::npos ? nl : nl - begin));
        if (nl == std::string::npos)
            break;
        begin = nl + 1;
    }
    const std::string& pattern = lines.front();
    bool valid = true;
    try {
        qs::validateLayerPattern(pattern, "fuzz/recipe.json", "exclude[0]");
    } catch (const qs::Error&) {
        valid = false;
    }
    // The std::regex reference, only for patterns and names short enough that its backtracking
    // stays cheap.
    std::unique_ptr<std::regex> reference;
    // Counted repetitions are left out: std::regex expands "(a||..){999}" into a backtracking
    // search that takes seconds even on short names (a timeout of the reference, not of ours).
    if (valid && qs::isRegexPattern(pattern) && isShortAscii(pattern, 24) &&
        pattern.find('{') == std::string::npos) {
        try {
            reference = std::make_unique<std::regex>(pattern.substr(3), std::regex::ECMAScript);
        } catch (const std::regex_error&) {
        }
    }
    for (size_t i = 1; i < lines.size(); ++i) {
        const std::string& name = lines[i];
        const bool matched = qs::matchesLayerPattern(pattern, name); // must not throw
        if (!valid && matched)
            __builtin_trap(); // a refused pattern matches nothing
        if (reference && isShortAscii(name, 12) && std::regex_match(name, *reference) != matched)
            __builtin_trap();
        if (!name.empty() && !qs::matchesLayerPattern(qs::exactLayerPattern(name), name))
            __builtin_trap();
    }
    return 0;
}
