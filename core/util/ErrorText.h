#pragma once

#include <exception>
#include <string>

namespace qs {

// The message of an exception as a user should read it: Torch's own errors (c10::Error) carry a
// C++ backtrace that means nothing outside a debugger, so only their first part is kept. Lets the
// CLI and the engine report errors without including Torch headers themselves.
std::string errorText(const std::exception& e);

} // namespace qs
