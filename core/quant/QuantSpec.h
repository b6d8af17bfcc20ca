// How one tensor is quantized: data type, granularity, scale type, observer. A plain value type
// (no Torch) so recipes, the CLI and the GUI can hold and edit it. JSON uses the key names of
// Quark's QTensorConfig.to_dict() so a Quark quantization_config maps onto it.
#pragma once

#include "quant/QuantTypes.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace qs::quant {

struct QuantSpec {
    DataType dtype = DataType::Int8;
    Granularity granularity = Granularity::PerTensor;
    // per_channel: the channel axis (weights: 0, the output features). per_group: the axis along
    // which consecutive elements form groups (weights: -1, the input features), as Quark's
    // ch_axis. Ignored for per_tensor and per_token (per_token always reduces the last axis).
    int chAxis = 0;
    int groupSize = 0; // per_group only; must equal the type's block size for MX/NVFP4/MX6/BFP16
    bool symmetric = true;
    ScaleType scaleType = ScaleType::Float;
    RoundMethod roundMethod = RoundMethod::HalfEven;
    bool isDynamic = false;
    ObserverKind observer = ObserverKind::MinMax;

    // The natural spec for a type: integers and FP8 per-tensor symmetric, MX/NVFP4/FP4/FP6 per
    // group along the last axis with their block size and scale type.
    static QuantSpec defaults(DataType dtype);

    // Throws qs::Error(source, field, reason) naming the offending Quark key ("dtype", "qscheme",
    // "ch_axis", "group_size", "symmetric", "is_dynamic", "round_method", "scale_type",
    // "observer_cls").
    void validate(const std::string& source = "QuantSpec") const;

    // Quark QTensorConfig.to_dict() form. NVFP4 is two Quark stages (FP4 per group + FP8 scale
    // quantization), so it serialises to a JSON array of two specs like Quark's ScaleQuantSpec.
    nlohmann::json toJson() const;
    // Strict: unknown keys, wrong JSON types and unsupported values throw qs::Error naming the key.
    // `role` resolves Quark's per-token convention (dynamic per_channel with ch_axis 1 on
    // activations). The result is validated.
    static QuantSpec fromJson(const nlohmann::json& json, TensorRole role = TensorRole::Weight,
                              const std::string& source = "QuantSpec");

    // Short human text, e.g. "int4 per_group(128, axis -1) sym minmax static".
    std::string summary() const;

    bool operator==(const QuantSpec& other) const;
    bool operator!=(const QuantSpec& other) const { return !(*this == other); }
};

} // namespace qs::quant
