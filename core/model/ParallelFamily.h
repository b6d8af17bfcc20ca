#pragma once

#include "model/ModelFamily.h"
#include "model/ParallelModel.h"

namespace qs {

// Shared module tree, model and scaling template of the parallel-attention decoders (GPT-J,
// Phi-2, Cohere; ParallelModel). A family file parses its own config.json keys into
// ModelConfig (DecoderLayout::parallelBlock and what differs) and says where its tensors are.
class ParallelFamily : public ModelFamily {
public:
    ModuleNode buildTree(const ModelConfig& config, const Checkpoint& checkpoint) const override;
    std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                         std::shared_ptr<const Checkpoint> checkpoint,
                                         const ComputeOptions& compute) const override;
    // Only the groups that are exact and measurable in a parallel block: v_proj -> the attention
    // output projection, and for a gated MLP up_proj -> down_proj. The block's one norm feeds
    // q, k, v and the MLP's input linears together (Quark's GPT-J and Cohere templates scale
    // them as one group, with no module to inspect): Quantscope's AWQ measures a group on one
    // module's output, and a parallel block's output is the sum of two, so that group is not
    // declared; a recipe that names it is refused by ScalingGroups.
    ScalingTemplate scalingTemplate(const ModelConfig& config) const override;

    virtual ParallelNames names() const = 0;

protected:
    // Checks every family needs after parsing: an even head dimension and an even, non-zero
    // number of rotary dimensions; qs::Error naming the field otherwise.
    static void checkRotary(const ModelConfig& config, const std::string& field);
};

} // namespace qs
