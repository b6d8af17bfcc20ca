#pragma once

#include "model/ModelConfig.h"

#include <string>

namespace qs {

class JsonFields;

// Reads the rotary embedding of a config.json into `config.rope` (and `config.slidingRope` where
// sliding and full attention layers differ, as Gemma 3's do), accepting both spellings:
//   transformers 5: "rope_parameters": {"rope_type": ..., "rope_theta": ..., <type's fields>}
//                   or one such object per layer type ({"full_attention": {...},
//                   "sliding_attention": {...}});
//   transformers 4: top-level "rope_theta" (+ Gemma 3's "rope_local_base_freq") and
//                   "rope_scaling": {"rope_type" or "type": ..., <type's fields>}.
// Every field a type needs is required, every field it does not know is an error naming it, and
// a type Quantscope does not compute is refused.
void parseRope(const JsonFields& fields, ModelConfig& config);

} // namespace qs
