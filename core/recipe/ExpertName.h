#pragma once

#include <string>

namespace qs {

// A mixture-of-experts expert linear's name split at the expert's index:
// "model.layers.3.mlp.experts.17.down_proj" -> {"model.layers.3.mlp.experts", "17",
// "down_proj"}; DBRX's "transformer.blocks.0.ffn.experts.mlp.2.w1" -> {"...ffn.experts.mlp",
// "2", "w1"}. All empty when the name is not an expert's linear (shared experts included).
// Torch-free.
struct ExpertName {
    std::string experts; // the experts' module
    std::string index;   // the expert's index, as written
    std::string linear;  // what follows the index
};

ExpertName splitExpertName(const std::string& name);

} // namespace qs
