#pragma once

#include "model/ModelConfig.h"

#include <string>

namespace qs {

// Parses config.json text into a typed config; the family that owns model_type reads its own
// fields. Every problem throws qs::Error naming `source`, the field and the reason.
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source);
// Reads <directory>/config.json.
ModelConfig loadModelConfig(const std::string& directory);

} // namespace qs
