#pragma once

#include "model/DecoderModel.h"

namespace qs {

// DBRX as transformers computes it (modeling_dbrx): per block
//   x = norm_1(h); qkv = clamp(Wqkv(x), -clip_qkv, clip_qkv) = rows [q; k; v];
//   h = h + out_proj(attn(rotate_half RoPE(q, k), v)); h = h + moe(norm_2(h)),
// LayerNorms without bias, a mixture of experts in every block (MoeLayer: softmax router,
// top-k divided by their sum, experts stored fused as w1 / v1 / w2, FusedExperts.h), a final
// norm_f and an untied lm_head. Tensors live under transformer.wte, transformer.blocks.N.
// {norm_attn_norm.{norm_1, attn.Wqkv, attn.out_proj, norm_2}, ffn.{router.layer, experts.mlp}}
// and transformer.norm_f.
class DbrxModel : public DecoderModel {
public:
    using DecoderModel::DecoderModel;

    ForwardContext makeContext(int64_t seqLen) const override;
    at::Tensor embed(const at::Tensor& ids) override;
    std::unique_ptr<DecoderBlock> loadBlock(int index) override;
    at::Tensor logits(const at::Tensor& hidden) override;

    // DBRX's LayerNorm: no bias, mean subtracted, in float32 as nn.LayerNorm accumulates.
    at::Tensor norm(const at::Tensor& x, const at::Tensor& weight) const;

    // "transformer.blocks.3." for block 3.
    static std::string blockPrefix(int index);

private:
    at::Tensor m_embedding;
    at::Tensor m_finalNorm;
    at::Tensor m_head;
};

} // namespace qs
