#pragma once

#include <string>

namespace qs {

// Writes a whole file under a temporary name in the same folder and renames it into place, so a
// crash or error never leaves a half-written output. Throws qs::Error naming the path.
void writeFileAtomically(const std::string& path, const std::string& bytes);

} // namespace qs
