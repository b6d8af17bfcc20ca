#pragma once

#include <string>

namespace qs {

// Whether `s` begins / ends with `part` (an empty part always matches).
inline bool startsWith(const std::string& s, const std::string& part) {
    return s.size() >= part.size() && s.compare(0, part.size(), part) == 0;
}
inline bool endsWith(const std::string& s, const std::string& part) {
    return s.size() >= part.size() && s.compare(s.size() - part.size(), part.size(), part) == 0;
}

} // namespace qs
