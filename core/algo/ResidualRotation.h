// QuaRot's R1 (Quark's "rotation" algorithm with r1): an orthogonal rotation Q of the residual
// stream fused offline into the weights, so that the model computes the same function while
// every linear that reads the stream sees rotated inputs, whose outlier channels are spread
// over all channels (what makes per-tensor and MX activation scales fit).
//
// Every RMSNorm weight g is first folded into the linears that read the norm (W diag(g); the
// norm's weight becomes ones), since a per-channel scale between the stream and the linears
// would not commute with Q. Then, with Q = H / sqrt(n) (Hadamard.h):
//   embedding rows              E Q
//   q, k, v, gate, up           W diag(g_norm) Q
//   o_proj, down_proj           Q^T W  (bias b Q); with r4, down_proj Q^T W R4 and its input
//                               rotated online by R4 (Hadamard of the intermediate size)
//   LM head                     W diag(g_final) Q  (a tied head becomes its own weight)
// With r2 (SpinQuant's R2, offline): a rotation R2 of one head's dimensions applied to every
// head of v_proj's output (rows, and bias, per head: R2^T W_v) and undone on o_proj's input
// columns (W_o R2 per head). Attention mixes v's rows per head with the softmax weights, so each
// head's output is the original times R2 and o_proj's output is unchanged; o_proj's input
// activations are the rotated ones (what its activation quantizer sees).
// RMSNorm(x Q) = RMSNorm(x) Q for orthogonal Q (the mean square is unchanged), so every hidden
// state is the original times Q and the logits are unchanged. Applied as weights load
// (DecoderModel::setWeightTransform): block by block, never the whole model.
#pragma once

#include "algo/Hadamard.h"
#include "model/DecoderModel.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace qs::algo {

struct RotationOptions {
    int64_t rotationSize = 0; // Quark's rotation_size: block-diagonal rotation; 0 = hidden size
    bool randomR1 = false;    // Quark's random_r1: random signs on the Hadamard rows
    uint64_t seed = 0;        // signs (random_r1) and the random orthogonal fallback
    // Quark's r4: an online rotation R4 of down_proj's input (intermediate size), its inverse
    // fused into down_proj's weight; the activation quantizer sees the rotated input.
    bool r4 = false;
    // Quark's r2 / random_r2: an offline rotation of each attention head's dimensions between
    // v_proj and o_proj (Hadamard of head_dim, random signs with random_r2).
    bool r2 = false;
    bool randomR2 = false;
};

// The recipe's rotation parameters (AlgorithmCatalog names) read into options; throws
// qs::Error(source, "algorithms[i].<param>", why) for what the engine does not run (r3, online
// R1, trainable rotations).
RotationOptions rotationOptionsFromParams(const nlohmann::json& params, const std::string& source,
                                          const std::string& field);

class ResidualRotation : public WeightTransform {
public:
    // Throws qs::Error naming the family and the reason when the model cannot be rotated this way
    // (LayerNorm, Gemma's (1 + w) norms, sandwich norms, fused projections, mixtures of experts),
    // or when rotation_size does not divide the hidden size.
    ResidualRotation(const ModelConfig& config, const RotationOptions& options,
                     const std::string& source);

    at::Tensor load(const std::string& name, const Checkpoint& checkpoint,
                    const ComputeOptions& compute) const override;
    // r4: down_proj's input x -> x R4 (in float64, back to the input's dtype).
    void prepareBlock(DecoderBlock& block) const override;
    std::string notExportable() const override;

    // The input of block linear `layer` ("model.layers.3.mlp.up_proj") as the unrotated model
    // computes it, from its input x in the rotated model: x Q^T diag(g) for q/k/v and gate/up
    // (g the norm's weight, read from `checkpoint`), x R4^T for down_proj under r4, each head
    // of x times R2^T for o_proj under r2, x for o_proj and down_proj otherwise (their inputs
    // are not rotated by R1). Float64.
    at::Tensor unrotatedInput(const std::string& layer, const at::Tensor& x,
                              const Checkpoint& checkpoint) const;

    // What the plans record: "rotation r1 hadamard 64".
    std::string description() const;
    const OrthogonalRotation& rotation() const { return m_rotation; }

private:
    // x with each head (R2's size) of its last dimension times R2 (R2^T with `transpose`).
    at::Tensor perHead(const at::Tensor& x, bool transpose) const;

    ModelConfig m_config;
    OrthogonalRotation m_rotation;
    std::shared_ptr<const OrthogonalRotation> m_r4; // null without r4
    std::shared_ptr<const OrthogonalRotation> m_r2; // null without r2
};

} // namespace qs::algo
