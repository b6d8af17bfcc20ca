#include "quant/QuantScheme.h"

#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

namespace qs::quant {

using nlohmann::json;

void QuantScheme::validate(const std::string& source) const {
    weight.validate(source + ".weight");
    if (weightPreStage) {
        weightPreStage->validate(source + ".weight[0]");
        if (weightPreStage->isDynamic || weight.isDynamic)
            throw Error(source + ".weight", "is_dynamic",
                        "progressive weight stages must both be static");
    }
    if (input)
        input->validate(source + ".input_tensors");
    if (output)
        output->validate(source + ".output_tensors");
}

json QuantScheme::toQuarkLayerConfig() const {
    json j;
    if (weightPreStage)
        j["weight"] = json::array({weightPreStage->toJson(), weight.toJson()});
    else
        j["weight"] = weight.toJson();
    j["input_tensors"] = input ? input->toJson() : json(nullptr);
    j["output_tensors"] = output ? output->toJson() : json(nullptr);
    j["bias"] = nullptr;
    j["target_device"] = nullptr;
    return j;
}

QuantScheme QuantScheme::fromQuarkLayerConfig(const json& j, const std::string& source) {
    if (!j.is_object())
        throw Error(source, "", "a layer quantization config must be a JSON object");
    for (const auto& item : j.items()) {
        const std::string& k = item.key();
        if (k != "weight" && k != "input_tensors" && k != "output_tensors" && k != "bias" &&
            k != "target_device")
            throw Error(source, k, "unknown key");
    }
    if (j.contains("bias") && !j["bias"].is_null())
        throw Error(source, "bias", "bias quantization is not supported");
    if (!j.contains("weight") || j["weight"].is_null())
        throw Error(source, "weight", "missing (weight-less schemes are not supported)");

    QuantScheme s;
    const json& w = j["weight"];
    const std::string wsrc = source + ".weight";
    if (w.is_array() && w.size() == 2 && w[1].is_object() && !w[1].value("is_scale_quant", false)) {
        s.weightPreStage = QuantSpec::fromJson(w[0], TensorRole::Weight, wsrc + "[0]");
        s.weight = QuantSpec::fromJson(w[1], TensorRole::Weight, wsrc + "[1]");
    } else {
        s.weight = QuantSpec::fromJson(w, TensorRole::Weight, wsrc);
    }
    if (j.contains("input_tensors") && !j["input_tensors"].is_null())
        s.input =
            QuantSpec::fromJson(j["input_tensors"], TensorRole::Input, source + ".input_tensors");
    if (j.contains("output_tensors") && !j["output_tensors"].is_null())
        s.output = QuantSpec::fromJson(j["output_tensors"], TensorRole::Output,
                                       source + ".output_tensors");
    s.validate(source);
    return s;
}

std::string QuantScheme::label() const {
    if (!name.empty()) {
        // A name that takes a group size says which one it has.
        const SchemeName* entry = findSchemeName(name);
        if (entry && entry->takesGroupSize && weight.granularity == Granularity::PerGroup)
            return name + " (group " + std::to_string(weight.groupSize) + ")";
        return name;
    }
    return description.empty() ? weight.summary() : description;
}

bool QuantScheme::operator==(const QuantScheme& o) const {
    return weight == o.weight && weightPreStage == o.weightPreStage && input == o.input &&
           output == o.output;
}

} // namespace qs::quant
