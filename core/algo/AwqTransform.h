// AWQ (Lin et al.; Quark's AwqProcessor, AutoAWQ's search) as a transform of the calibration
// pipeline. Per block, for each scaling group whose `inp` linear quantizes its weight:
//  1. scale search: candidates s = mean|X|^ratio, ratio = i / 20 for i = 0..19, clamped below at
//     1e-4 and normalised by sqrt(max(s) min(s)); the group's weights are quantized as
//     Q(W s) (the plan's weight scheme, round to nearest) and fed x / s; the candidate that
//     minimises the mean squared error of the inspected module's output (o_proj's for the
//     attention inputs, down_proj's for the MLP's, the linear's own otherwise) over the
//     calibration batches wins (ties keep the smaller ratio). Quark computes a weight mean as
//     well but leaves it out of the scales; so do we. Under grouped-query attention the
//     v_proj -> o_proj candidates are measured as they are, over all of o_proj's input
//     channels, and the chosen one is constrained (max over the query heads of a kv head) when
//     it is applied, as Quark does.
//  2. All groups' scales are applied at once (1/s into the preceding norm or linear).
//  3. clipping search, per linear except q/k (their products go through softmax): per output
//     channel and weight group, the clip max|w| (1 - i / 20), i = 0..9, that minimises the
//     squared error of the group's partial dot products on up to 512 evenly strided captured
//     tokens (divided by the applied scales), then the weights are clamped. Only for weight
//     schemes whose groups lie within a row (per channel, per group along the input).
// The weight pass then quantizes the rescaled, clipped weights round-to-nearest: the codes an
// exporter writes are AWQ's.
#pragma once

#include "algo/ScalingGroups.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace qs::algo {

struct AwqOptions {
    int grid = 20;            // scale ratios i / grid, i < grid
    int clipGrid = 20;        // clip shrink steps of 1 / clipGrid
    double maxShrink = 0.5;   // clip at most this fraction away
    int64_t clipTokens = 512; // captured tokens the clip search uses (evenly strided)
    bool clip = true;
};

class AwqTransform : public BlockTransform {
public:
    // params: scaling_layers (the family's template when absent), model_decoder_layers (ignored).
    AwqTransform(const nlohmann::json& params, const std::string& source, AwqOptions options = {});

    std::string name() const override { return "awq"; }
    bool needsInputs() const override { return true; }
    bool choosesCodes() const override { return true; }
    void checkModel(const ModelConfig& config) const override;
    void apply(BlockTransformInput& input) override;

    // The grid search of one group (step 1): the chosen scales (float32, before the GQA
    // constraint, which apply() takes when it applies them: constrainScales) and ratio.
    // `progress` is called before each grid point with the fraction done and may throw
    // (qs::Cancelled).
    struct Choice {
        at::Tensor scales;
        double ratio = 0.0;
        double loss = 0.0;
    };
    Choice searchScales(BlockTransformInput& input, const ResolvedScalingGroup& group,
                        const std::function<void(double)>& progress = nullptr) const;
    // The clip search of one linear (step 3): per output channel and group, the clip value.
    // weight [out, in]; inputs [rows, in] as the linear sees them. Returns the clamped weight.
    at::Tensor clipWeight(const LayerPlan& plan, const at::Tensor& weight,
                          const at::Tensor& inputs) const;
    // The candidate scales of one ratio, before constraining (AutoSmoothQuant shares them).
    static at::Tensor candidateScales(const at::Tensor& actStat, double ratio);

private:
    nlohmann::json m_params;
    std::string m_source;
    AwqOptions m_options;
};

} // namespace qs::algo
