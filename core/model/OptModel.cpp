#include "model/OptModel.h"

#include "model/CausalAttention.h"
#include "model/ForwardThreads.h"
#include "model/LlamaStyleModel.h"
#include "util/Error.h"

#include <cmath>

namespace qs {

namespace {

constexpr double kLayerNormEps = 1e-5; // OPT's nn.LayerNorm default

class OptBlock : public DecoderBlock {
public:
    OptBlock(int index, const OptModel& model) : DecoderBlock(index), m_cfg(model.config()) {
        const std::string p = "model.decoder.layers." + std::to_string(index) + ".";
        auto make = [&](const std::string& sub, const std::string& kind) {
            LinearLayer l;
            l.name = p + sub;
            l.kind = kind;
            l.weight = model.loadWeight(l.name + ".weight");
            if (m_cfg.enableBias)
                l.bias = model.loadWeight(l.name + ".bias");
            return l;
        };
        m_q = make("self_attn.q_proj", "q_proj");
        m_k = make("self_attn.k_proj", "k_proj");
        m_v = make("self_attn.v_proj", "v_proj");
        m_o = make("self_attn.out_proj", "out_proj");
        m_fc1 = make("fc1", "fc1");
        m_fc2 = make("fc2", "fc2");
        m_attnNormW = model.loadWeight(p + "self_attn_layer_norm.weight");
        m_attnNormB = model.loadOptional(p + "self_attn_layer_norm.bias");
        m_ffnNormW = model.loadWeight(p + "final_layer_norm.weight");
        m_ffnNormB = model.loadOptional(p + "final_layer_norm.bias");
    }

    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const SmallForwardGuard threads(x.numel() / x.size(-1), x.size(-1));
        const int64_t B = x.size(0), T = x.size(1), H = m_cfg.hiddenSize;
        const int64_t nh = m_cfg.numHeads, hd = m_cfg.headDim;
        const bool pre = m_cfg.doLayerNormBefore;
        at::Tensor h = pre ? norm(x, m_attnNormW, m_attnNormB) : x;
        const at::Tensor q = applyLinear(m_q, h, ctx).view({B, T, nh, hd}).transpose(1, 2);
        const at::Tensor k = applyLinear(m_k, h, ctx).view({B, T, nh, hd}).transpose(1, 2);
        const at::Tensor v = applyLinear(m_v, h, ctx).view({B, T, nh, hd}).transpose(1, 2);
        const double scale = 1.0 / std::sqrt(double(hd));
        at::Tensor a = fusedCausalAttention(q, k, v, scale, 0, ctx.mask);
        if (!a.defined())
            a = attention(q, k, v, ctx.mask, scale);
        at::Tensor x1 = x + applyLinear(m_o, a.transpose(1, 2).reshape({B, T, H}), ctx);
        if (!pre)
            x1 = norm(x1, m_attnNormW, m_attnNormB);
        h = pre ? norm(x1, m_ffnNormW, m_ffnNormB) : x1;
        h = applyLinear(m_fc2, activation(m_cfg.hiddenAct, applyLinear(m_fc1, h, ctx)), ctx);
        at::Tensor out = x1 + h;
        return pre ? out : norm(out, m_ffnNormW, m_ffnNormB);
    }

    std::vector<LinearLayer*> linears() override {
        return {&m_q, &m_k, &m_v, &m_o, &m_fc1, &m_fc2};
    }

    std::vector<BlockNorm> norms() override {
        const std::string p = "model.decoder.layers." + std::to_string(index()) + ".";
        return {
            {p + "self_attn_layer_norm", &m_attnNormW,
             m_attnNormB.defined() ? &m_attnNormB : nullptr},
            {p + "final_layer_norm", &m_ffnNormW, m_ffnNormB.defined() ? &m_ffnNormB : nullptr}};
    }

private:
    at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
        return at::layer_norm(x, {m_cfg.hiddenSize}, w, b, kLayerNormEps);
    }

    const ModelConfig& m_cfg;
    LinearLayer m_q, m_k, m_v, m_o, m_fc1, m_fc2;
    at::Tensor m_attnNormW, m_attnNormB, m_ffnNormW, m_ffnNormB;
};

} // namespace

at::Tensor OptModel::embed(const at::Tensor& ids) {
    if (!m_embedding.defined()) {
        m_embedding = loadWeight("model.decoder.embed_tokens.weight");
        m_positions = loadWeight("model.decoder.embed_positions.weight");
        m_projectIn = loadOptional("model.decoder.project_in.weight");
    }
    const int64_t T = ids.size(1);
    if (T + m_config.positionOffset > m_positions.size(0))
        throw Error(m_config.source, "max_position_embeddings",
                    "sequence of " + std::to_string(T) + " tokens exceeds the learned positions");
    at::Tensor h = at::embedding(m_embedding, ids.to(m_compute.device));
    if (m_projectIn.defined())
        h = at::linear(h, m_projectIn);
    const at::Tensor pos = m_positions.narrow(0, m_config.positionOffset, T);
    return h + pos.unsqueeze(0);
}

std::unique_ptr<DecoderBlock> OptModel::loadBlock(int index) {
    if (index < 0 || index >= numBlocks())
        throw Error(m_config.source, "num_hidden_layers",
                    "block " + std::to_string(index) + " out of range");
    return std::make_unique<OptBlock>(index, *this);
}

at::Tensor OptModel::logits(const at::Tensor& hidden) {
    if (!m_headLoaded) {
        if (!m_embedding.defined())
            embed(at::zeros({1, 1}, at::kLong)); // loads the embedding tables
        m_finalNormWeight = loadOptional("model.decoder.final_layer_norm.weight");
        m_finalNormBias = loadOptional("model.decoder.final_layer_norm.bias");
        m_projectOut = loadOptional("model.decoder.project_out.weight");
        m_head = m_config.tieWordEmbeddings ? m_embedding : loadWeight("lm_head.weight");
        m_headLoaded = true;
    }
    at::Tensor h = hidden;
    if (m_finalNormWeight.defined() && m_config.doLayerNormBefore)
        h = at::layer_norm(h, {m_config.hiddenSize}, m_finalNormWeight, m_finalNormBias,
                           kLayerNormEps);
    if (m_projectOut.defined())
        h = at::linear(h, m_projectOut);
    return at::linear(h, m_head).to(at::kFloat);
}

} // namespace qs
