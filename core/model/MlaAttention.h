#pragma once

#include "model/DecoderModel.h"

#include <string>
#include <vector>

namespace qs {

// Multi-head latent attention (DeepSeek-V3, ModelConfig's MlaConfig) as transformers computes it
// in eager mode: q = q_b_proj(q_a_layernorm(q_a_proj(x))) (or q_proj(x)) split per head into
// [nope | rope]; [latent | k_rope] = kv_a_proj_with_mqa(x); kv_b_proj(kv_a_layernorm(latent))
// split per head into [k_nope | v]; RoPE on q_rope and on the one k_rope every head shares; the
// softmax over q.k x MlaConfig::scale; o_proj. All five projections are ordinary linears; the
// two low-rank norms are RMSNorms.
class MlaAttention {
public:
    // `prefix`: the attention module, e.g. "model.layers.0.self_attn".
    MlaAttention(const DecoderModel& model, const std::string& prefix);

    // x: [B, T, H] → [B, T, H]
    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx);
    void appendLinears(std::vector<LinearLayer*>& out);

private:
    const ModelConfig& m_cfg;
    LinearLayer m_q, m_qA, m_qB, m_kvA, m_kvB, m_o; // m_q without q LoRA, m_qA/m_qB with it
    at::Tensor m_qNorm, m_kvNorm;
};

} // namespace qs
