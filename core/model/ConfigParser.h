#pragma once

#include "model/ModelConfig.h"

#include <string>

namespace qs {

// Parses config.json text into a typed config; the family that owns model_type reads its own
// fields. Every problem throws qs::Error naming `source`, the field and the reason.
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source);
// Reads <directory>/config.json.
ModelConfig loadModelConfig(const std::string& directory);
// Whether `key` is metadata every transformers config may carry (ids, dropout, generation
// defaults, ...), which no forward reads: accepted beside the family's keys, also in the
// nested configs of a family that has them (DBRX's attn_config, ffn_config).
bool isConfigMetadataKey(const std::string& key);

} // namespace qs
