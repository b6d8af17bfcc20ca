#include "util/ErrorText.h"

#include <c10/util/Exception.h>

namespace qs {

std::string errorText(const std::exception& e) {
    if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
        return c10->what_without_backtrace();
    return e.what();
}

} // namespace qs
