#pragma once

#include "model/DecoderModel.h"

namespace qs {

// RMSNorm as Hugging Face computes it: normalise in float32, scale in the input dtype.
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);
// The activation named by config.json hidden_act / activation_function.
at::Tensor activation(const std::string& name, const at::Tensor& x);
// Causal multi-head attention with grouped KV heads; q: [B, nh, T, d], k/v: [B, nkv, T, d].
// Softmax in float32 as transformers does.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, double scale);

// The pre-norm rotary decoder shared by Llama, Mistral and Qwen2 (the families differ in config
// fields and biases only).
class LlamaStyleModel : public DecoderModel {
public:
    using DecoderModel::DecoderModel;

    ForwardContext makeContext(int64_t seqLen) const override;
    at::Tensor embed(const at::Tensor& ids) override;
    std::unique_ptr<DecoderBlock> loadBlock(int index) override;
    at::Tensor logits(const at::Tensor& hidden) override;

    // Rotary inverse frequencies (float32, [headDim / 2]) with rope_scaling applied.
    at::Tensor inverseFrequencies() const;

private:
    at::Tensor m_embedding;
    at::Tensor m_finalNorm;
    at::Tensor m_head;
};

} // namespace qs
