#pragma once

#include <string>
#include <vector>

namespace qs {

// The items separated by `separator`, the last two by `last` (messages listing what is
// supported: join({"a", "b", "c"}, ", ", " and ") is "a, b and c").
inline std::string join(const std::vector<std::string>& items, const std::string& separator,
                        const std::string& last) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += i + 1 == items.size() ? last : separator;
        out += items[i];
    }
    return out;
}
inline std::string join(const std::vector<std::string>& items, const std::string& separator) {
    return join(items, separator, separator);
}

} // namespace qs
