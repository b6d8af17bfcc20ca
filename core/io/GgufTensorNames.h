// llama.cpp's tensor names for the Llama layout (convert_hf_to_gguf.py's tensor map) against the
// Hugging Face names: the llama row of the architecture table (io/GgufArchitecture.h, which also
// holds the other architectures and their stacked experts), read in both directions.
#pragma once

#include <string>

namespace qs {

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; empty when the tensor has
// no GGUF name (not part of the Llama layout).
std::string ggufNameOfHfTensor(const std::string& hfName);
// The inverse: "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"; empty when the
// name is not one of the table's.
std::string hfNameOfGgufTensor(const std::string& ggufName);

} // namespace qs
