#pragma once

#include "model/DecoderModel.h"

#include <string>

namespace qs {

// Where a parallel decoder keeps its tensors; each family file (model/families/) fills one.
struct ParallelNames {
    std::string embed;     // "model.embed_tokens"; GPT-J "transformer.wte"
    std::string layers;    // "model.layers"; GPT-J "transformer.h"
    std::string norm;      // the block's one norm: "input_layernorm"; GPT-J "ln_1"
    std::string attention; // "self_attn"; GPT-J "attn"
    std::string out;       // attention output: "o_proj"; Phi "dense"; GPT-J "out_proj"
    // An ungated MLP's two linears ("mlp.fc1", "mlp.fc2"; GPT-J "mlp.fc_in", "mlp.fc_out");
    // both empty for the gated mlp.gate_proj / up_proj / down_proj (Cohere).
    std::string fcIn, fcOut;
    std::string finalNorm; // "model.norm"; Phi "model.final_layernorm"; GPT-J "transformer.ln_f"

    bool gated() const { return fcIn.empty(); }
    // "model.layers.3." for block 3.
    std::string block(int index) const { return layers + "." + std::to_string(index) + "."; }
};

// The parallel-attention decoders (GPT-J, Phi-2, Cohere), as transformers computes them: each
// block reads one norm of the residual stream into both sublayers,
//   h = h + attn(norm(h)) + mlp(norm(h)),
// with LayerNorm (with or without bias), RoPE on the first rotary dimensions of each head in
// rotate_half or interleaved pairs (DecoderLayout::ropeInterleaved), an LM head that may carry a
// bias and a logit scale. ModelConfig's DecoderLayout says which; ParallelNames where.
class ParallelModel : public DecoderModel {
public:
    ParallelModel(ModelConfig config, std::shared_ptr<const Checkpoint> checkpoint,
                  ComputeOptions compute, ParallelNames names);

    ForwardContext makeContext(int64_t seqLen) const override;
    at::Tensor embed(const at::Tensor& ids) override;
    std::unique_ptr<DecoderBlock> loadBlock(int index) override;
    at::Tensor logits(const at::Tensor& hidden) override;

    const ParallelNames& names() const { return m_names; }
    // The family's norm: LayerNorm (bias optional) or RMSNorm, computed in float32.
    at::Tensor norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const;

private:
    ParallelNames m_names;
    at::Tensor m_embedding;
    at::Tensor m_finalNorm, m_finalNormBias;
    at::Tensor m_head, m_headBias;
};

} // namespace qs
