#pragma once

#include <string>

namespace qs {

// Decoder block of a checkpoint tensor name ("...layers.12...." -> 12); -1 for tensors before
// the blocks (embeddings), INT_MAX for those after (final norm, head). Exporters stream the
// source's tensors in this order so each block's tensors are written when the block is done.
int blockOfTensorName(const std::string& name);

} // namespace qs
