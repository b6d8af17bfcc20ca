// Quark's "rotation" algorithm in the calibration pipeline: the R1 rotation of the residual
// stream (ResidualRotation) is a model-level transform, installed on the model before the block
// loop (BlockTransform::modelTransform); per block it only records, in each plan, that the
// layer's weight is rotated and how ("rotation r1 hadamard 64"), so reports and exporters see it.
// An analysed run shows each layer's ranges before the rotation, mapped back from the rotated
// block (rangesBefore).
#pragma once

#include "algo/ResidualRotation.h"
#include "calib/BlockTransform.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace qs::algo {

class RotationTransform : public BlockTransform {
public:
    // params: Quark's rotation parameters (r1 true; r2, r3, r4 false; rotation_size; random_r1),
    // refused by name where the engine does not run them (rotationOptionsFromParams).
    RotationTransform(const nlohmann::json& params, const std::string& source);

    std::string name() const override { return "rotation"; }
    std::string rangesLabel() const override { return "rotation"; }
    // The inputs un-rotated (ResidualRotation::unrotatedInput) and the checkpoint's weight.
    void rangesBefore(const BlockTransformInput& input, const LinearLayer& layer,
                      const std::vector<at::Tensor>& captured, at::Tensor& inputAbsmax,
                      at::Tensor& weightAbsmax) const override;
    std::shared_ptr<const WeightTransform> modelTransform(const ModelConfig& config) override;
    void apply(BlockTransformInput& input) override;

private:
    RotationOptions m_options;
    std::string m_source;
    std::shared_ptr<const ResidualRotation> m_rotation; // set by modelTransform
};

} // namespace qs::algo
