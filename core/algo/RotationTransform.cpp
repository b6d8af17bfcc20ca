#include "algo/RotationTransform.h"

#include "util/Error.h"

namespace qs::algo {

RotationTransform::RotationTransform(const nlohmann::json& params, const std::string& source)
    : m_options(rotationOptionsFromParams(params, source, "rotation")), m_source(source) {}

std::shared_ptr<const WeightTransform>
RotationTransform::modelTransform(const ModelConfig& config) {
    m_rotation = std::make_shared<ResidualRotation>(config, m_options, m_source);
    return m_rotation;
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
