#pragma once

#include "model/DecoderModel.h"

namespace qs {

// RMSNorm as Hugging Face computes it: normalise in float32, scale in the input dtype.
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);
// Gemma's RMSNorm: normalise and scale by (1 + w) in float32, then cast back.
at::Tensor rmsNormPlusOne(const at::Tensor& x, const at::Tensor& weight, double eps);
// The activation named by config.json hidden_act / activation_function.
at::Tensor activation(const std::string& name, const at::Tensor& x);
// Causal multi-head attention with grouped KV heads; q: [B, nh, T, d], k/v: [B, nkv, T, d].
// Softmax in float32 as transformers does. `softcap` > 0 applies Gemma 2's
// tanh(scores / cap) * cap to the scaled scores before the mask.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, double scale, double softcap = 0.0);
// The cos / sin tables [T, head_dim] of `rope` for positions 0..T-1 (rotate_half or, with
// DecoderLayout::ropeInterleaved, interleaved pairs), scaled by the type's attention factor, in
// the compute dtype on the compute device.
void rotaryTables(const ModelConfig& config, const RopeParameters& rope, int64_t seqLen,
                  const ComputeOptions& compute, at::Tensor& cosOut, at::Tensor& sinOut);
// gpt-oss's attention with sinks (transformers' eager_attention_forward for gpt_oss): each
// head's sink logit (sinks: [nh]) joins the masked, scaled scores as a last column, the row
// maximum is subtracted, the softmax taken in float32 and the sink's column dropped.
at::Tensor attentionWithSinks(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& mask, double scale, const at::Tensor& sinks);

// The pre-norm rotary decoder shared by Llama, Mistral, Qwen2/3, Gemma 2/3, Phi-3, Mixtral and
// Qwen3-MoE; ModelConfig's DecoderLayout and MoeConfig say what a family changes.
class LlamaStyleModel : public DecoderModel {
public:
    using DecoderModel::DecoderModel;

    ForwardContext makeContext(int64_t seqLen) const override;
    at::Tensor embed(const at::Tensor& ids) override;
    std::unique_ptr<DecoderBlock> loadBlock(int index) override;
    at::Tensor logits(const at::Tensor& hidden) override;

    // The norm the family uses (RMSNorm, or Gemma's (1 + w) RMSNorm).
    at::Tensor norm(const at::Tensor& x, const at::Tensor& weight) const;

private:
    at::Tensor m_embedding;
    at::Tensor m_finalNorm;
    at::Tensor m_head;
};

} // namespace qs
