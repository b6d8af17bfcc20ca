#include "model/ParallelModel.h"

#include "model/CausalAttention.h"
#include "model/ForwardThreads.h"
#include "model/LlamaStyleModel.h"
#include "model/Rope.h"
#include "util/Error.h"

#include <cmath>

namespace qs {

namespace {

class ParallelBlock : public DecoderBlock {
public:
    ParallelBlock(int index, const ParallelModel& model)
        : DecoderBlock(index), m_model(model), m_cfg(model.config()) {
        const ParallelNames& n = model.names();
        const std::string p = n.block(index);
        auto make = [&](const std::string& sub, bool bias) {
            LinearLayer l;
            l.name = p + sub;
            l.kind = sub.substr(sub.rfind('.') + 1);
            l.weight = model.loadWeight(l.name + ".weight");
            if (bias)
                l.bias = model.loadWeight(l.name + ".bias");
            return l;
        };
        const std::string a = n.attention + ".";
        m_q = make(a + "q_proj", m_cfg.attentionBias);
        m_k = make(a + "k_proj", m_cfg.attentionBias);
        m_v = make(a + "v_proj", m_cfg.attentionBias);
        m_o = make(a + n.out, m_cfg.outputBias);
        if (n.gated()) {
            m_gate = make("mlp.gate_proj", m_cfg.mlpBias);
            m_up = make("mlp.up_proj", m_cfg.mlpBias);
            m_down = make("mlp.down_proj", m_cfg.mlpBias);
        } else {
            m_up = make(n.fcIn, m_cfg.mlpBias);
            m_down = make(n.fcOut, m_cfg.mlpBias);
        }
        m_norm = model.loadWeight(p + n.norm + ".weight");
        if (m_cfg.layout.normBias)
            m_normBias = model.loadWeight(p + n.norm + ".bias");
    }

    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const SmallForwardGuard threads(x.numel() / x.size(-1), x.size(-1));
        const at::Tensor h = m_model.norm(x, m_norm, m_normBias);
        const at::Tensor a = attend(h, ctx);
        return x + a + mlp(h, ctx);
    }

    std::vector<LinearLayer*> linears() override {
        if (m_model.names().gated())
            return {&m_q, &m_k, &m_v, &m_o, &m_gate, &m_up, &m_down};
        return {&m_q, &m_k, &m_v, &m_o, &m_up, &m_down};
    }

    std::vector<BlockNorm> norms() override {
        const ParallelNames& n = m_model.names();
        return {{n.block(index()) + n.norm, &m_norm, m_normBias.defined() ? &m_normBias : nullptr}};
    }

private:
    at::Tensor attend(const at::Tensor& h, const ForwardContext& ctx) {
        const int64_t B = h.size(0), T = h.size(1);
        const int64_t nh = m_cfg.numHeads, nkv = m_cfg.numKvHeads, hd = m_cfg.headDim;
        at::Tensor q = applyLinear(m_q, h, ctx).reshape({B, T, nh, hd}).transpose(1, 2);
        at::Tensor k = applyLinear(m_k, h, ctx).reshape({B, T, nkv, hd}).transpose(1, 2);
        const at::Tensor v = applyLinear(m_v, h, ctx).reshape({B, T, nkv, hd}).transpose(1, 2);
        const bool interleaved = m_cfg.layout.ropeInterleaved;
        q = applyRotary(q, ctx.cos, ctx.sin, interleaved);
        k = applyRotary(k, ctx.cos, ctx.sin, interleaved);
        const double scale = 1.0 / std::sqrt(double(hd));
        at::Tensor a = fusedCausalAttention(q, k, v, scale, 0, ctx.mask);
        if (!a.defined())
            a = attention(q, k, v, ctx.mask, scale);
        return applyLinear(m_o, a.transpose(1, 2).reshape({B, T, nh * hd}), ctx);
    }

    at::Tensor mlp(const at::Tensor& h, const ForwardContext& ctx) {
        if (m_model.names().gated()) {
            const at::Tensor g = activation(m_cfg.hiddenAct, applyLinear(m_gate, h, ctx));
            return applyLinear(m_down, g * applyLinear(m_up, h, ctx), ctx);
        }
        return applyLinear(m_down, activation(m_cfg.hiddenAct, applyLinear(m_up, h, ctx)), ctx);
    }

    const ParallelModel& m_model;
    const ModelConfig& m_cfg;
    // An ungated MLP keeps fc_in / fc1 in m_up and fc_out / fc2 in m_down.
    LinearLayer m_q, m_k, m_v, m_o, m_gate, m_up, m_down;
    at::Tensor m_norm, m_normBias;
};

} // namespace

ParallelModel::ParallelModel(ModelConfig config, std::shared_ptr<const Checkpoint> checkpoint,
                             ComputeOptions compute, ParallelNames names)
    : DecoderModel(std::move(config), std::move(checkpoint), compute), m_names(std::move(names)) {}

at::Tensor ParallelModel::norm(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias) const {
    if (!m_config.layout.layerNorm)
        return rmsNorm(x, weight, m_config.normEps);
    // Cohere's LayerNorm normalises and scales in float32 and casts back; nn.LayerNorm (GPT-J,
    // Phi-2) accumulates in float32 as well, so float32 compute is the same operation.
    const at::Tensor b = bias.defined() ? bias.to(at::kFloat) : at::Tensor();
    return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, weight.to(at::kFloat), b,
                          m_config.normEps)
        .to(x.scalar_type());
}

ForwardContext ParallelModel::makeContext(int64_t seqLen) const {
    ForwardContext ctx = DecoderModel::makeContext(seqLen);
    const RotaryFrequencies f = rotaryFrequencies(m_config.rope, m_config.headDim,
                                                  m_config.maxPositions, seqLen, m_config.source);
    const at::Tensor positions = at::arange(seqLen, at::kLong).to(at::kFloat);
    const at::Tensor freqs = at::outer(positions, f.inverse);
    // Interleaved pairs repeat each frequency in place (f0 f0 f1 f1 ...), rotate_half pairs
    // repeat the whole list (f0 f1 ... f0 f1 ...).
    const at::Tensor emb = m_config.layout.ropeInterleaved ? freqs.repeat_interleave(2, -1)
                                                           : at::cat({freqs, freqs}, -1);
    at::Tensor cos = emb.cos(), sin = emb.sin();
    if (f.attentionScaling != 1.0) {
        cos = cos * f.attentionScaling;
        sin = sin * f.attentionScaling;
    }
    ctx.cos = cos.to(m_compute.device, m_compute.dtype);
    ctx.sin = sin.to(m_compute.device, m_compute.dtype);
    return ctx;
}

at::Tensor ParallelModel::embed(const at::Tensor& ids) {
    if (!m_embedding.defined())
        m_embedding = loadWeight(m_names.embed + ".weight");
    return at::embedding(m_embedding, ids.to(m_compute.device));
}

std::unique_ptr<DecoderBlock> ParallelModel::loadBlock(int index) {
    if (index < 0 || index >= numBlocks())
        throw Error(m_config.source, "num_hidden_layers",
                    "block " + std::to_string(index) + " out of range");
    return finishBlock(std::make_unique<ParallelBlock>(index, *this));
}

at::Tensor ParallelModel::logits(const at::Tensor& hidden) {
    if (!m_finalNorm.defined()) {
        m_finalNorm = loadWeight(m_names.finalNorm + ".weight");
        if (m_config.layout.normBias)
            m_finalNormBias = loadWeight(m_names.finalNorm + ".bias");
        // A weight transform may make the head differ from the embedding: then it loads the
        // head on its own (as LlamaStyleModel does).
        if (m_config.tieWordEmbeddings && !hasWeightTransform()) {
            if (!m_embedding.defined())
                m_embedding = loadWeight(m_names.embed + ".weight");
            m_head = m_embedding;
        } else {
            m_head = loadWeight("lm_head.weight");
        }
        if (m_config.layout.headBias)
            m_headBias = loadWeight("lm_head.bias");
    }
    at::Tensor out = at::linear(norm(hidden, m_finalNorm, m_finalNormBias), m_head, m_headBias);
    if (m_config.layout.logitScale != 1.0)
        out = out * m_config.layout.logitScale;
    return out.to(at::kFloat);
}

} // namespace qs
