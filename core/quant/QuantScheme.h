// A quantization scheme: what happens to a linear layer's weight, input activations and output.
// Plain value type; maps to and from a Quark layer config ({"weight", "input_tensors",
// "output_tensors", "bias"}) so a Quark quantization_config can be read into schemes.
#pragma once

#include "quant/QuantSpec.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace qs::quant {

struct QuantScheme {
    std::string name;        // registry name ("int4_wo_128") or empty for a custom scheme
    std::string description; // one line for help texts
    QuantSpec weight;
    // Progressive quantization (Quark ProgressiveSpec, used by int4_fp8): the weight is first
    // quantized with this spec, the result is quantized with `weight`, and dequantization runs
    // both stages backwards.
    std::optional<QuantSpec> weightPreStage;
    std::optional<QuantSpec> input;
    std::optional<QuantSpec> output;

    void validate(const std::string& source = "QuantScheme") const;
    // How reports, the CLI and the GUI name this scheme: the registry name, else the one-line
    // description, else the weight spec's summary; a name that takes a group size adds it
    // ("w_uint4_per_group_asym (group 32)"). Text only: never parsed back into a scheme.
    std::string label() const;

    // Quark layer config: {"weight": ..., "input_tensors": ..., "output_tensors": ...,
    // "bias": null, "target_device": null}. A progressive weight becomes a two-element list.
    nlohmann::json toQuarkLayerConfig() const;
    static QuantScheme fromQuarkLayerConfig(const nlohmann::json& layerConfig,
                                            const std::string& source = "quantization_config");

    bool operator==(const QuantScheme& other) const;
    bool operator!=(const QuantScheme& other) const { return !(*this == other); }
};

} // namespace qs::quant
