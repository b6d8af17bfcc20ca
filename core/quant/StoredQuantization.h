#pragma once

#include "quant/Quantize.h"

#include <map>
#include <optional>
#include <string>

namespace qs::quant {

// Quantization a checkpoint already carries: a real-quantized export opened for compute, whose
// weights were dequantized from their codes on load and whose static activation parameters
// were calibrated when it was written. A run over such a checkpoint applies these instead of
// quantizing the weights again (they are on the grid already, and re-deriving a scale from
// dequantized values can move it by an ulp) or calibrating the activations again.
struct StoredLayerQuantization {
    bool weight = false;               // the weight is dequantized codes: used as it is
    std::optional<QuantParams> input;  // static input quantizer's parameters as stored
    std::optional<QuantParams> output; // static output (KV-cache) quantizer's parameters
};

// Keyed by the linear's full name ("model.layers.0.self_attn.q_proj").
using StoredQuantization = std::map<std::string, StoredLayerQuantization>;

} // namespace qs::quant
