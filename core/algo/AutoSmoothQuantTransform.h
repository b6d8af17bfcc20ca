// AutoSmoothQuant (Quark's AutoSmoothQuantProcessor): SmoothQuant whose migration strength is
// searched per scaling group instead of fixed. Candidates s = max|X|^ratio, ratio = i / 10 for
// i = 0..9, clamped below at 1e-4 and normalised by sqrt(max(s) min(s)); the group's linears
// compute Q_w(W s) Q_x(x / s) with their plan's weight and input quantizers (the input range
// observed on the captured inputs divided by s, as the static quantizer will see them), and the
// candidate with the smallest error (compute_scale_loss: MSE, default, or MAE) of the inspected
// module's output wins. Scales of all groups are searched on the block as loaded, then applied.
#pragma once

#include "algo/GroupOutputProbe.h"
#include "algo/ScalingGroups.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <string>

namespace qs::algo {

class AutoSmoothQuantTransform : public BlockTransform {
public:
    // params: scaling_layers (the family's template when absent), model_decoder_layers
    // (ignored), compute_scale_loss ("MSE" default, "MAE").
    AutoSmoothQuantTransform(const nlohmann::json& params, const std::string& source);

    std::string name() const override { return "autosmoothquant"; }
    bool needsInputs() const override { return true; }
    std::string rangesLabel() const override { return "AutoSmoothQuant"; }
    void checkModel(const ModelConfig& config) const override;
    void apply(BlockTransformInput& input) override;

private:
    nlohmann::json m_params;
    std::string m_source;
    ScaleLoss m_loss = ScaleLoss::Mse;
    int m_grid = 10;
};

} // namespace qs::algo
