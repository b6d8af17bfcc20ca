#pragma once

#include "model/DecoderModel.h"

#include <string>
#include <utility>
#include <vector>

namespace qs {

// The sparse mixture-of-experts MLP of Mixtral and Qwen3-MoE, as transformers computes it: the
// router's logits (a bias-free linear, kept in full precision), a float32 softmax over all
// experts, the top-k, optionally renormalised to sum to one, then for each expert the SwiGLU
// MLP on the tokens routed to it, weighted and summed in expert order. Each expert's linears
// go through the hook like any other linear, on only the tokens routed to them: calibration
// observes what the expert really sees.
class MoeLayer {
public:
    // `prefix`: the MoE module, e.g. "model.layers.0.block_sparse_moe".
    MoeLayer(const DecoderModel& model, const std::string& prefix);

    // x: [B, T, H] → [B, T, H]
    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx);
    void appendLinears(std::vector<LinearLayer*>& out);
    std::vector<std::pair<std::string, int64_t>> routedTokens() const;
    void resetRoutedTokens();

private:
    struct Expert {
        std::string name;
        LinearLayer gate, up, down;
        int64_t routed = 0;
    };
    const ModelConfig& m_cfg;
    at::Tensor m_router; // [experts, H]
    std::vector<Expert> m_experts;
};

} // namespace qs
