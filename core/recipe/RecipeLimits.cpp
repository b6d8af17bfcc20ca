#include "recipe/RecipeLimits.h"

#include "util/Error.h"

namespace qs {

std::string FieldLimit::refusal(int64_t value) const {
    std::string text = "value " + std::to_string(value) + " outside [" + std::to_string(min) +
                       ", " + std::to_string(max) + "]";
    if (special >= 0)
        text += " (" + std::string(specialMeaning) + ")";
    return text;
}

void FieldLimit::check(int64_t value, const std::string& source) const {
    if (!allows(value))
        throw Error(source, field, refusal(value));
}

} // namespace qs
