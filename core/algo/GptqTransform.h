// GPTQ and its asymmetric variants GPTAQ and Qronos as a transform of the calibration pipeline:
// for each quantized linear of a block, the Hessian of its captured calibration inputs (and for
// GPTAQ and Qronos the cross term with the same rows in the full-precision model), then the
// solver, which fills the plan's weight (codes, scales, zero points and the dequantized weight the
// forward uses); the weight pass then leaves those plans alone. Parameters are Quark's
// GPTQConfig, GPTAQConfig and QronosConfig names (AlgorithmCatalog).
#pragma once

#include "algo/Gptaq.h"
#include "algo/Qronos.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qs::algo {

// The solver a GptqTransform runs: its name is the algorithm's in the catalog.
enum class HessianSolver { Gptq, Gptaq, Qronos };

class GptqTransform : public BlockTransform {
public:
    // params (Quark's defaults): block_size (128), desc_act (true), static_groups (true),
    // inside_layer_modules (all quantized linears when absent); damp_percent (0.01) for GPTQ and
    // GPTAQ; alpha (GPTAQ 0.25, Qronos 1e-3) and beta (Qronos, 1e4).
    GptqTransform(const nlohmann::json& params, const std::string& source,
                  HessianSolver solver = HessianSolver::Gptq);

    std::string name() const override;
    bool needsInputs() const override { return true; }
    // Quark's GPTQ takes each block's Hessians from the previous blocks as quantized (its
    // processor feeds block i+1 with block i's outputs after GPTQ), whatever the calibration
    // mode of the static observers; GPTAQ and Qronos take the full-precision model's stream
    // beside it (Quark's orig_layer_inputs, run through the block's original weights).
    Stream stream() const override {
        return m_solver == HessianSolver::Gptq ? Stream::Quantized : Stream::QuantizedAndReference;
    }
    bool choosesCodes() const override { return true; }
    // Its Hessians add every rank's batches in shard order (calib/CalibrationShards.h).
    bool combinesAcrossRanks() const override { return true; }
    void checkLayer(const std::string& layer, const quant::QuantScheme& scheme) const override;
    void checkModel(const ModelConfig& config) const override;
    void apply(BlockTransformInput& input) override;

    const GptqOptions& options() const { return m_options; }

private:
    bool covers(const std::string& layer) const;
    GptqResult solve(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& cross,
                     const quant::QuantSpec& spec, const std::string& layer,
                     const std::function<void(double)>& progress) const;

    HessianSolver m_solver;
    GptaqOptions m_options; // GPTQ's and GPTAQ's
    QronosOptions m_qronos;
    std::vector<std::string> m_modules; // suffixes such as "self_attn.q_proj"; empty: all
    std::string m_source;
};

} // namespace qs::algo
