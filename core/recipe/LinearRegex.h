// The engine of "re:" layer patterns (recipe/LayerPattern.h): a full match of an ECMAScript
// subset in linear time, without recursion, so that a recipe received from someone else cannot
// hang or overflow the stack (LinearRegex.cpp says why std::regex cannot be used and what is
// accepted).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace qs {

// The longest layer pattern, fnmatch or "re:", a recipe may hold.
constexpr size_t kMaxPatternLength = 4096;

// An expression the engine refuses: the message says why and where (and names the limit hit).
class RegexSyntaxError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Whether `expression` matches the whole of `name`. Compiled programs are cached and shared
// between threads. Throws RegexSyntaxError for an expression it refuses.
bool regexFullMatch(const std::string& expression, const std::string& name);
// Compiles `expression` (into the cache) and throws RegexSyntaxError when it cannot.
void checkRegex(const std::string& expression);

} // namespace qs
