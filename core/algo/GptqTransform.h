// GPTQ as a transform of the calibration pipeline: for each quantized linear of a block, the
// Hessian of its captured calibration inputs, then gptqQuantize, which fills the plan's weight
// (codes, scales, zero points and the dequantized weight the forward uses); the weight pass then
// leaves those plans alone. Parameters are Quark's GPTQConfig names (AlgorithmCatalog).
#pragma once

#include "algo/Gptq.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qs::algo {

class GptqTransform : public BlockTransform {
public:
    // params: damp_percent (0.01), block_size (128), desc_act (true), static_groups (true),
    // inside_layer_modules (all quantized linears when absent), as Quark's defaults.
    GptqTransform(const nlohmann::json& params, const std::string& source);

    std::string name() const override { return "gptq"; }
    bool needsInputs() const override { return true; }
    // Quark's GPTQ takes each block's Hessians from the previous blocks as quantized (its
    // processor feeds block i+1 with block i's outputs after GPTQ), whatever the calibration
    // mode of the static observers.
    Stream stream() const override { return Stream::Quantized; }
    bool choosesCodes() const override { return true; }
    // Its Hessians add every rank's batches in shard order (calib/CalibrationShards.h).
    bool combinesAcrossRanks() const override { return true; }
    void checkLayer(const std::string& layer, const quant::QuantScheme& scheme) const override;
    void apply(BlockTransformInput& input) override;

    const GptqOptions& options() const { return m_options; }

private:
    bool covers(const std::string& layer) const;

    GptqOptions m_options;
    std::vector<std::string> m_modules; // suffixes such as "self_attn.q_proj"; empty: all
    std::string m_source;
};

} // namespace qs::algo
