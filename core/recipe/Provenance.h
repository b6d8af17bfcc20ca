// Where a recipe came from: which model config (by hash), which tool version, when.
#pragma once

#include "recipe/Recipe.h"

#include <string>

namespace qs {

// SHA-256 (lowercase hex) of the canonical form of a config.json: nlohmann's compact dump,
// which sorts keys and drops whitespace, so reformatting or reordering the file keeps the hash.
// Invalid JSON throws qs::Error naming `source`.
std::string modelConfigHash(const std::string& configJsonText,
                            const std::string& source = "config.json");

// QS_VERSION, defined by core's CMake from the project version.
std::string toolVersion();

// Hash of the config, tool version, the current UTC time (ISO 8601) and the model path.
Provenance makeProvenance(const std::string& configJsonText, const std::string& modelPath);

} // namespace qs
