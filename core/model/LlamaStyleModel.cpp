#include "model/LlamaStyleModel.h"

#include "util/Error.h"

#include <cmath>

namespace qs {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
    const at::Tensor h = x.to(at::kFloat);
    const at::Tensor normed = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * normed.to(x.scalar_type());
}

at::Tensor activation(const std::string& name, const at::Tensor& x) {
    if (name == "silu" || name == "swish")
        return at::silu(x);
    if (name == "relu")
        return at::relu(x);
    if (name == "gelu")
        return at::gelu(x);
    if (name == "gelu_pytorch_tanh" || name == "gelu_new")
        return at::gelu(x, "tanh");
    throw Error("config.json", "hidden_act", "unsupported activation '" + name + "'");
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, double scale) {
    const int64_t groups = q.size(1) / k.size(1);
    at::Tensor kk = k, vv = v;
    if (groups > 1) {
        // transformers' repeat_kv: query head h reads KV head h / groups.
        kk = k.repeat_interleave(groups, 1);
        vv = v.repeat_interleave(groups, 1);
    }
    at::Tensor scores = at::matmul(q, kk.transpose(-2, -1)) * scale + mask;
    scores = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    return at::matmul(scores, vv);
}

namespace {

at::Tensor rotateHalf(const at::Tensor& x) {
    const int64_t half = x.size(-1) / 2;
    return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

class LlamaStyleBlock : public DecoderBlock {
public:
    LlamaStyleBlock(int index, const LlamaStyleModel& model)
        : DecoderBlock(index), m_cfg(model.config()) {
        const std::string p = "model.layers." + std::to_string(index) + ".";
        auto make = [&](const std::string& sub, const std::string& kind, bool bias) {
            LinearLayer l;
            l.name = p + sub;
            l.kind = kind;
            l.weight = model.loadWeight(l.name + ".weight");
            if (bias)
                l.bias = model.loadWeight(l.name + ".bias");
            return l;
        };
        m_q = make("self_attn.q_proj", "q_proj", m_cfg.attentionBias);
        m_k = make("self_attn.k_proj", "k_proj", m_cfg.attentionBias);
        m_v = make("self_attn.v_proj", "v_proj", m_cfg.attentionBias);
        m_o = make("self_attn.o_proj", "o_proj", m_cfg.outputBias);
        m_gate = make("mlp.gate_proj", "gate_proj", m_cfg.mlpBias);
        m_up = make("mlp.up_proj", "up_proj", m_cfg.mlpBias);
        m_down = make("mlp.down_proj", "down_proj", m_cfg.mlpBias);
        m_inputNorm = model.loadWeight(p + "input_layernorm.weight");
        m_postNorm = model.loadWeight(p + "post_attention_layernorm.weight");
    }

    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const int64_t B = x.size(0), T = x.size(1);
        const int64_t nh = m_cfg.numHeads, nkv = m_cfg.numKvHeads, hd = m_cfg.headDim;
        const at::Tensor h = rmsNorm(x, m_inputNorm, m_cfg.normEps);
        at::Tensor q = applyLinear(m_q, h, ctx).view({B, T, nh, hd}).transpose(1, 2);
        at::Tensor k = applyLinear(m_k, h, ctx).view({B, T, nkv, hd}).transpose(1, 2);
        const at::Tensor v = applyLinear(m_v, h, ctx).view({B, T, nkv, hd}).transpose(1, 2);
        q = q * ctx.cos + rotateHalf(q) * ctx.sin;
        k = k * ctx.cos + rotateHalf(k) * ctx.sin;
        const at::Tensor a = attention(q, k, v, ctx.mask, 1.0 / std::sqrt(double(hd)));
        const at::Tensor x1 = x + applyLinear(m_o, a.transpose(1, 2).reshape({B, T, nh * hd}), ctx);
        const at::Tensor h2 = rmsNorm(x1, m_postNorm, m_cfg.normEps);
        const at::Tensor g = activation(m_cfg.hiddenAct, applyLinear(m_gate, h2, ctx));
        return x1 + applyLinear(m_down, g * applyLinear(m_up, h2, ctx), ctx);
    }

    std::vector<LinearLayer*> linears() override {
        return {&m_q, &m_k, &m_v, &m_o, &m_gate, &m_up, &m_down};
    }

private:
    const ModelConfig& m_cfg;
    LinearLayer m_q, m_k, m_v, m_o, m_gate, m_up, m_down;
    at::Tensor m_inputNorm, m_postNorm;
};

} // namespace

at::Tensor LlamaStyleModel::inverseFrequencies() const {
    const int64_t dim = m_config.headDim;
    at::Tensor inv = 1.0 / at::pow(m_config.ropeTheta,
                                   at::arange(0, dim, 2, at::kLong).to(at::kFloat) / double(dim));
    if (!m_config.ropeScaling)
        return inv;
    const RopeScaling& rs = *m_config.ropeScaling;
    if (rs.type == "linear")
        return inv / rs.factor;
    if (rs.type == "llama3") {
        // transformers' _compute_llama3_parameters: long wavelengths divided by the factor, short
        // ones kept, a smooth blend in between.
        const double oldLen = double(rs.originalMaxPositions);
        const double lowWavelen = oldLen / rs.lowFreqFactor;
        const double highWavelen = oldLen / rs.highFreqFactor;
        const at::Tensor wavelen = 2.0 * M_PI / inv;
        at::Tensor scaled = at::where(wavelen > lowWavelen, inv / rs.factor, inv);
        const at::Tensor smooth =
            (oldLen / wavelen - rs.lowFreqFactor) / (rs.highFreqFactor - rs.lowFreqFactor);
        const at::Tensor smoothed = (1 - smooth) * scaled / rs.factor + smooth * scaled;
        const at::Tensor medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
        return at::where(medium, smoothed, scaled);
    }
    throw Error(m_config.source, "rope_scaling.rope_type", "unsupported type '" + rs.type + "'");
}

ForwardContext LlamaStyleModel::makeContext(int64_t seqLen) const {
    ForwardContext ctx = DecoderModel::makeContext(seqLen);
    const at::Tensor positions = at::arange(seqLen, at::kLong).to(at::kFloat);
    const at::Tensor freqs = at::outer(positions, inverseFrequencies());
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    ctx.cos = emb.cos().to(m_compute.device, m_compute.dtype);
    ctx.sin = emb.sin().to(m_compute.device, m_compute.dtype);
    return ctx;
}

at::Tensor LlamaStyleModel::embed(const at::Tensor& ids) {
    if (!m_embedding.defined())
        m_embedding = loadWeight("model.embed_tokens.weight");
    return at::embedding(m_embedding, ids.to(m_compute.device));
}

std::unique_ptr<DecoderBlock> LlamaStyleModel::loadBlock(int index) {
    if (index < 0 || index >= numBlocks())
        throw Error(m_config.source, "num_hidden_layers",
                    "block " + std::to_string(index) + " out of range");
    return std::make_unique<LlamaStyleBlock>(index, *this);
}

at::Tensor LlamaStyleModel::logits(const at::Tensor& hidden) {
    if (!m_finalNorm.defined()) {
        m_finalNorm = loadWeight("model.norm.weight");
        if (m_config.tieWordEmbeddings) {
            if (!m_embedding.defined())
                m_embedding = loadWeight("model.embed_tokens.weight");
            m_head = m_embedding;
        } else {
            m_head = loadWeight("lm_head.weight");
        }
    }
    return at::linear(rmsNorm(hidden, m_finalNorm, m_config.normEps), m_head).to(at::kFloat);
}

} // namespace qs
