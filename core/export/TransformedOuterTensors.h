#pragma once

#include <string>

namespace qs {

class Checkpoint;
class DecoderModel;

// A model-level transform (the residual rotation) changes tensors outside the blocks too: the
// embedding, the final norm and the LM head; the blocks' own tensors reach the exporters from
// the transformed blocks. This writes every tensor outside the blocks as the transformed model
// has it, in the source's dtype, to the safetensors file `path`, so exporters read them through
// Checkpoint::addOverlay like any source tensor. A head the source ties to the embedding is
// written as its own "lm_head.weight" (a rotation folds the final norm into it, so the two
// differ): returns true then, and the export's config must say tie_word_embeddings false.
bool writeTransformedOuterTensors(const DecoderModel& model, const Checkpoint& source,
                                  const std::string& path);

} // namespace qs
