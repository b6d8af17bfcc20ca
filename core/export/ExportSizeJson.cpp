// exportSizeJson: the size report as the CLI's `recipe --size --json` prints it (the keys are
// defined in ExportSize.h).
#include "export/ExportSize.h"

namespace qs {

namespace {

nlohmann::ordered_json optional(const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json formatJson(const ExportSizeReport& r, const FormatSize& f) {
    nlohmann::ordered_json j;
    j["format"] = f.format;
    j["holds"] = f.holds();
    j["problems"] = f.problems;
    j["warnings"] = f.warnings;
    if (!f.holds())
        return j;
    j["bits_per_linear_weight"] = optional(r.bitsPerLinearWeight(f.format));
    j["bits_per_quantized_weight"] = optional(r.bitsPerQuantizedWeight(f.format));
    j["bits_per_parameter"] = optional(r.bitsPerParameter(f.format));
    j["tensor_bytes"] = f.tensorBytes;
    j["model_bytes"] = f.modelBytes;
    j["linear_weight_bytes"] = f.linearWeightBytes;
    j["quantized_weight_bytes"] = f.quantizedWeightBytes;
    nlohmann::ordered_json roles = nlohmann::ordered_json::object();
    for (const auto& [role, bytes] : f.bytesByRole)
        roles[storedRoleName(role)] = bytes;
    j["bytes_by_role"] = roles;
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& [name, bytes] : f.files)
        files.push_back({{"name", name}, {"bytes", bytes}});
    j["files"] = files;
    j["files_exact"] = f.filesExact;
    j["files_note"] = f.filesNote;
    return j;
}

nlohmann::ordered_json linearJson(const LinearSize& l) {
    nlohmann::ordered_json j;
    j["name"] = l.name;
    j["shape"] = l.shape;
    j["scheme"] = l.scheme ? nlohmann::ordered_json(l.scheme->label()) : nullptr;
    if (!l.scheme) {
        j["note"] = l.note;
        j["source_dtype"] = l.sourceDtype;
    }
    j["scheme_bits"] = {{"codes", l.bits.codes},
                        {"scales", l.bits.scales},
                        {"zero_points", l.bits.zeroPoints},
                        {"block_scales", l.bits.blockScales},
                        {"per_weight", double(l.bits.total()) / double(l.elements())}};
    nlohmann::ordered_json stored = nlohmann::ordered_json::object();
    for (const auto& [format, bytes] : l.storedBytes)
        stored[format] = bytes;
    j["stored_bytes"] = stored;
    return j;
}

} // namespace

nlohmann::ordered_json exportSizeJson(const ExportSizeReport& r) {
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["parameters"] = r.parameters;
    j["linear_weights"] = r.linearWeights;
    j["quantized_weights"] = r.quantizedWeights;
    j["effective_bits"] = optional(r.effectiveBits());
    j["effective_bits_definition"] =
        "bits per weight over every block linear's weight (codes, scales, zero points and block "
        "scales of the quantized ones, the stored float weight of the others; not activation "
        "or KV-cache scales, not the LM head) as the Quark hf_format export (model.safetensors) "
        "stores them; null when that format cannot hold the recipe";
    j["scheme_bits"] = {{"per_linear_weight", r.schemeBitsPerLinearWeight()},
                        {"per_quantized_weight", optional(r.schemeBitsPerQuantizedWeight())}};
    nlohmann::ordered_json formats = nlohmann::ordered_json::array();
    for (const FormatSize& f : r.formats)
        formats.push_back(formatJson(r, f));
    j["formats"] = formats;
    nlohmann::ordered_json linears = nlohmann::ordered_json::array();
    for (const LinearSize& l : r.linears)
        linears.push_back(linearJson(l));
    j["layers"] = linears;
    j["notes"] = r.notes;
    return j;
}

} // namespace qs
