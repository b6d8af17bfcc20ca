#pragma once

#include "model/DecoderModel.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// The sparse mixture-of-experts MLP of Mixtral, Qwen3-MoE, Qwen1.5-MoE and DeepSeek-V3, as
// transformers computes it: the router's logits (a bias-free linear, kept in full precision), a
// float32 softmax over all experts, the top-k, optionally renormalised to sum to one (DeepSeek:
// sigmoid scores, chosen by group with a correction bias, MoeConfig), then for each
// expert the SwiGLU MLP on the tokens routed to it, weighted and summed in expert order; plus,
// where the config has one, a shared expert on every token, scaled by sigmoid of its gate (also
// kept in full precision). Each expert's linears go through the hook like any other linear, on
// only the tokens routed to them: calibration observes what the expert really sees.
// gpt-oss (MoeConfig::softmaxAfterTopK, routerBias, swigluLimit): a biased router whose top-k
// logits are softmaxed, and experts (with biases) applying a clamped SwiGLU.
class MoeLayer {
public:
    // `prefix`: the MoE module, e.g. "model.layers.0.block_sparse_moe".
    MoeLayer(const DecoderModel& model, const std::string& prefix);

    // x: [B, T, H] → [B, T, H]
    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx);
    void appendLinears(std::vector<LinearLayer*>& out);
    // Experts stored fused (MoeConfig::storage): the stored tensors rebuilt from the experts'
    // linears as they are now (fake-quantized after quantization), full name -> tensor. Empty
    // when each expert's linears have tensors of their own.
    std::map<std::string, at::Tensor> fusedTensors() const;
    std::vector<std::pair<std::string, int64_t>> routedTokens() const;
    void resetRoutedTokens();

private:
    struct Expert {
        std::string name;
        LinearLayer gate, up, down;
        int64_t routed = 0;
    };
    // Sigmoid routing with correction bias and groups (MoeConfig): weights and chosen [N, k].
    void route(const at::Tensor& flat, at::Tensor& weights, at::Tensor& chosen) const;
    // gpt-oss's router (MoeConfig::softmaxAfterTopK): the top-k of the biased logits, then a
    // softmax over those k; weights and chosen [N, k].
    void routeTopKSoftmax(const at::Tensor& flat, at::Tensor& weights, at::Tensor& chosen) const;
    // Llama 4's router (MoeConfig::scoreScalesInput): the top-k of the logits, weights the
    // sigmoid of the chosen logits (in float32); weights and chosen [N, k].
    void routeTopLogits(const at::Tensor& flat, at::Tensor& weights, at::Tensor& chosen) const;
    // down(act(gate(x)) * up(x)) through the hook
    at::Tensor swiglu(Expert& ex, const at::Tensor& x, const ForwardContext& ctx) const;
    // gpt-oss's clamped SwiGLU (MoeConfig::swigluLimit), through the hook
    at::Tensor clampedSwiglu(Expert& ex, const at::Tensor& x, const ForwardContext& ctx) const;
    const ModelConfig& m_cfg;
    std::string m_fusedPath; // the experts' module when they are stored fused, else empty
    at::Tensor m_router;     // [experts, H]
    at::Tensor m_routerBias; // [experts]; undefined without (MoeConfig::routerBias)
    at::Tensor m_correction; // [experts]: e_score_correction_bias; undefined without
    std::vector<Expert> m_experts;
    std::optional<Expert> m_shared; // sees every token: not marked routed
    at::Tensor m_sharedGate;        // [1, H]; undefined when the shared expert is ungated
};

} // namespace qs
