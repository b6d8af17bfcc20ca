#include "algo/RotationTransform.h"

#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::algo {

RotationTransform::RotationTransform(const nlohmann::json& params, const std::string& source)
    : m_options(rotationOptionsFromParams(params, source, "rotation")), m_source(source) {}

std::shared_ptr<const WeightTransform>
RotationTransform::modelTransform(const ModelConfig& config) {
    m_rotation = std::make_shared<ResidualRotation>(config, m_options, m_source);
    return m_rotation;
}

void RotationTransform::rangesBefore(const BlockTransformInput& input, const LinearLayer& layer,
                                     const std::vector<at::Tensor>& captured,
                                     at::Tensor& inputAbsmax, at::Tensor& weightAbsmax) const {
    if (!m_rotation || !input.checkpoint) {
        BlockTransform::rangesBefore(input, layer, captured, inputAbsmax, weightAbsmax);
        return;
    }
    // The block as loaded is already rotated (the model applies the rotation as it loads):
    // the inputs are mapped back, the weight is the checkpoint's.
    inputAbsmax = at::Tensor();
    for (const at::Tensor& b : captured) {
        const at::Tensor x = m_rotation->unrotatedInput(layer.name, b, *input.checkpoint);
        const at::Tensor m = x.abs().reshape({-1, x.size(-1)}).amax(0).to(at::kFloat);
        inputAbsmax = inputAbsmax.defined() ? at::maximum(inputAbsmax, m) : m;
    }
    weightAbsmax =
        loadTensor(*input.checkpoint, layer.name + ".weight", at::kFloat, layer.weight.device())
            .abs()
            .amax(0);
}

void RotationTransform::apply(BlockTransformInput& input) {
    if (!m_rotation)
        throw Error(m_source, "rotation",
                    "the model was not rotated before its blocks (modelTransform not called)");
    // Every linear of a rotated block reads or writes the rotated stream (ResidualRotation
    // refuses blocks with other linears), excluded layers included.
    const std::string what = m_rotation->description();
    for (LayerPlan& plan : input.plans)
        plan.transforms.push_back(what);
}

} // namespace qs::algo
