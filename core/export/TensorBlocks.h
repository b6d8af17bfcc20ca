#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace qs {

// Decoder block of a checkpoint tensor name ("...layers.12...." -> 12); -1 for tensors before
// the blocks (embeddings), INT_MAX for those after (final norm, head). Exporters stream the
// source's tensors in this order so each block's tensors are written when the block is done.
int blockOfTensorName(const std::string& name);

class DecoderBlock;
struct LayerPlan;

// The block's tensors an exporter writes from the block rather than copying from the source:
// every linear's weight, and when a transform rescaled the block (SmoothQuant, AWQ: 1/s folded
// into norms and preceding linears) also its linears' biases and its norms' weights and biases.
// Keyed by checkpoint tensor name ("model.layers.0.input_layernorm.weight").
std::map<std::string, const at::Tensor*> blockTensors(DecoderBlock& block,
                                                      const std::vector<LayerPlan>& plans);

} // namespace qs
