// SmoothQuant (Xiao et al.; Quark's SmoothQuantProcessor) as a transform of the calibration
// pipeline: for each scaling group of a block, s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)
// (X the group's captured calibration inputs, W the group's weights stacked, the maximum over
// every weight of input channel j, at least 1e-5), clamped below at scale_clamp_min; 1/s goes
// into the preceding norm or linear, s into the group's weights. Activation outliers move into
// the weights, which quantize per channel or per tensor more easily. The scales of all groups
// are computed before any is applied, from the block as loaded (as Quark).
#pragma once

#include "algo/ScalingGroups.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <string>

namespace qs::algo {

class SmoothQuantTransform : public BlockTransform {
public:
    // params: alpha (Quark's default 1.0), scale_clamp_min (1e-3), scaling_layers (the
    // family's template when absent), model_decoder_layers (ignored: blocks come from the family).
    SmoothQuantTransform(const nlohmann::json& params, const std::string& source);

    std::string name() const override { return "smoothquant"; }
    bool needsInputs() const override { return true; }
    std::string rangesLabel() const override { return "SmoothQuant"; }
    void checkModel(const ModelConfig& config) const override;
    void apply(BlockTransformInput& input) override;

    double alpha() const { return m_alpha; }
    double scaleClampMin() const { return m_clampMin; }

    // The scales of one group from its inputs' per-channel max |x| and its layers' weights.
    static at::Tensor smoothScales(const at::Tensor& actAbsMax,
                                   const std::vector<at::Tensor>& weights, double alpha,
                                   double clampMin);

private:
    nlohmann::json m_params;
    std::string m_source;
    double m_alpha = 1.0;
    double m_clampMin = 1e-3;
};

} // namespace qs::algo
