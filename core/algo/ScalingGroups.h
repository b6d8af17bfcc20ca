// A block's scaling groups (ScalingTemplate.h) resolved to its tensors, and the one operation the
// scaling algorithms share: moving a per-input-channel scale s between the preceding op (its
// output channels divided by s) and the group's linears (their input columns multiplied by s),
// which leaves the block's function unchanged in exact arithmetic. SmoothQuant, AWQ and
// AutoSmoothQuant differ only in how they choose s.
#pragma once

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"
#include "model/ScalingTemplate.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace qs::algo {

struct ResolvedScalingGroup {
    ScalingGroup spec;
    std::string prevName;              // full name of the preceding op
    BlockNorm norm;                    // the preceding norm (norm.weight null otherwise)
    LinearLayer* prevLinear = nullptr; // the preceding linear (null for a norm)
    LayerPlan* prevPlan = nullptr;     // its plan
    std::vector<LinearLayer*> layers;  // the linears that share the input
    std::vector<LayerPlan*> plans;     // their plans, same order
    LinearLayer* inp = nullptr;        // whose captured inputs give the statistics
    LinearLayer* inspect = nullptr;    // whose output the searches measure
    // Grouped-query attention between v_proj and o_proj: each row of v_proj feeds `kvRepeats`
    // input channels of o_proj (one per query head of its kv group), so the scales of those
    // channels must agree. 1 when the widths match.
    int64_t kvRepeats = 1;
    int64_t headDim = 0;

    int64_t channels() const { return layers.front()->weight.size(1); }
};

// The family's template for `config`, or the recipe's `scaling_layers` when `params` has them
// (module2inspect resolved through the family's moduleOutputs). qs::Error naming the field or
// the layer when the family has no template or the recipe names an unknown module.
ScalingTemplate scalingTemplateFor(const ModelConfig& config, const nlohmann::json& params,
                                   const std::string& source, const std::string& field);

// Resolves the template on one block. qs::Error(source, field, why) when a named module is not
// in the block or the shapes do not chain (the preceding op's width differs from the layers').
std::vector<ResolvedScalingGroup>
resolveScalingGroups(DecoderBlock& block, std::vector<LayerPlan>& plans,
                     const ScalingTemplate& tmpl, const ModelConfig& config,
                     const std::string& source, const std::string& field);

// s (float32 [channels]) made applicable to the group: under grouped-query attention the
// maximum over the query heads that share a kv head, repeated to every one of them (as Quark's
// scale_fc_fc and AutoAWQ do). Unchanged otherwise.
at::Tensor constrainScales(const ResolvedScalingGroup& group, const at::Tensor& s);

// Divides the preceding op's output channels by s (norm weight and bias, or the linear's rows
// and bias) and multiplies the layers' input columns by s, computed in float32 and stored in
// each tensor's dtype. s comes from constrainScales. The layers' new weights are new tensors.
void applyScales(ResolvedScalingGroup& group, const at::Tensor& s);

// Per-input-channel statistics of captured inputs ([rows, channels] per batch), float32.
at::Tensor channelAbsMax(const std::vector<at::Tensor>& batches);
at::Tensor channelAbsMean(const std::vector<at::Tensor>& batches);

// Records `what` in the plans of every linear the group changed (its layers and a preceding
// linear), once per plan.
void recordTransform(const ResolvedScalingGroup& group, const std::string& what);

// The captured inputs of `layer`, or qs::Error naming it when none were captured.
const std::vector<at::Tensor>&
capturedInputs(const std::map<std::string, std::vector<at::Tensor>>& inputs,
               const std::string& layer, const std::string& algorithm);

} // namespace qs::algo
