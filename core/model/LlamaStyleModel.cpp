#include "model/LlamaStyleModel.h"

#include "model/CausalAttention.h"
#include "model/ForwardThreads.h"
#include "model/MlaAttention.h"
#include "model/MoeLayer.h"
#include "model/Rope.h"
#include "util/Error.h"

#include <cmath>
#include <limits>

namespace qs {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
    const at::Tensor h = x.to(at::kFloat);
    const at::Tensor normed = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * normed.to(x.scalar_type());
}

at::Tensor rmsNormPlusOne(const at::Tensor& x, const at::Tensor& weight, double eps) {
    const at::Tensor h = x.to(at::kFloat);
    const at::Tensor normed = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return (normed * (1.0 + weight.to(at::kFloat))).to(x.scalar_type());
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
                     const at::Tensor& mask, double scale, double softcap) {
    const int64_t groups = q.size(1) / k.size(1);
    at::Tensor kk = k, vv = v;
    if (groups > 1) {
        // transformers' repeat_kv: query head h reads KV head h / groups.
        kk = k.repeat_interleave(groups, 1);
        vv = v.repeat_interleave(groups, 1);
    }
    at::Tensor scores = at::matmul(q, kk.transpose(-2, -1)) * scale;
    if (softcap > 0)
        scores = at::tanh(scores / softcap) * softcap;
    scores = at::softmax(scores + mask, -1, at::kFloat).to(q.scalar_type());
    return at::matmul(scores, vv);
}

at::Tensor attentionWithSinks(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& mask, double scale, const at::Tensor& sinks) {
    const int64_t groups = q.size(1) / k.size(1);
    at::Tensor kk = k, vv = v;
    if (groups > 1) {
        kk = k.repeat_interleave(groups, 1);
        vv = v.repeat_interleave(groups, 1);
    }
    const at::Tensor scores = at::matmul(q, kk.transpose(-2, -1)) * scale + mask;
    const int64_t B = q.size(0), nh = q.size(1), T = q.size(2);
    const at::Tensor sink =
        sinks.to(scores.scalar_type()).reshape({1, nh, 1, 1}).expand({B, nh, T, 1});
    at::Tensor combined = at::cat({scores, sink}, -1);
    combined = combined - std::get<0>(combined.max(-1, /*keepdim=*/true));
    const at::Tensor probs = at::softmax(combined, -1, at::kFloat).narrow(-1, 0, scores.size(-1));
    return at::matmul(probs.to(q.scalar_type()), vv);
}

namespace {

// Llama 4 (DecoderLayout): whether layer i rotates, and whether it attends in chunks.
bool ropes(const DecoderLayout& L, int i) {
    return L.ropeLayer.empty() || L.ropeLayer[size_t(i)];
}
bool chunked(const DecoderLayout& L, int i) {
    return L.attentionChunk > 0 && !L.chunkedLayer.empty() && L.chunkedLayer[size_t(i)];
}

// Llama4TextL2Norm: x * rsqrt(mean(x^2) + eps) over the last dimension in float32, no weight.
at::Tensor l2Norm(const at::Tensor& x, double eps) {
    const at::Tensor h = x.to(at::kFloat);
    return (h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type());
}

// q [B, nh, T, d] times 1 + scale * log1p(floor((pos + 1) / floor_scale)) per position, in
// float32 (transformers' attn_temperature_tuning; pos counts from 0 in the window).
at::Tensor temperatureTuned(const at::Tensor& q, const DecoderLayout& L) {
    const int64_t T = q.size(2);
    const at::Tensor pos = at::arange(T, q.options().dtype(at::kFloat));
    const at::Tensor s = at::log1p(at::floor((pos + 1.0) / L.tempFloor)) * L.tempScale + 1.0;
    return (q * s.view({1, 1, T, 1})).to(q.scalar_type());
}

// The causal mask with the keys outside the query's chunk masked too: key j is visible to
// query i iff j <= i and j / chunk == i / chunk.
at::Tensor chunkedMask(const at::Tensor& causal, int64_t chunk) {
    const int64_t T = causal.size(0);
    const at::Tensor c = at::arange(T, causal.options().dtype(at::kLong)).div(chunk, "floor");
    return causal.masked_fill(c.unsqueeze(1).ne(c.unsqueeze(0)),
                              -std::numeric_limits<float>::infinity());
}

class LlamaStyleBlock : public DecoderBlock {
public:
    LlamaStyleBlock(int index, const LlamaStyleModel& model)
        : DecoderBlock(index), m_model(model), m_cfg(model.config()) {
        const DecoderLayout& L = m_cfg.layout;
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
        if (m_cfg.mla.kvLoraRank > 0) {
            m_mla = std::make_unique<MlaAttention>(model, p + "self_attn");
        } else if (L.fusedQkv) {
            m_qkv = make("self_attn.qkv_proj", "qkv_proj", m_cfg.attentionBias);
            const int64_t hd = m_cfg.headDim;
            m_qkv.parts = {{"q", m_cfg.numHeads * hd},
                           {"k", m_cfg.numKvHeads * hd},
                           {"v", m_cfg.numKvHeads * hd}};
        } else {
            m_q = make("self_attn.q_proj", "q_proj", m_cfg.attentionBias);
            m_k = make("self_attn.k_proj", "k_proj", m_cfg.attentionBias);
            m_v = make("self_attn.v_proj", "v_proj", m_cfg.attentionBias);
        }
        if (!m_mla)
            m_o = make("self_attn.o_proj", "o_proj", m_cfg.outputBias);
        if (L.attnSinks)
            m_sinks = model.loadWeight(p + "self_attn.sinks");
        if (L.qkNorm) {
            m_qNorm = model.loadWeight(p + "self_attn.q_norm.weight");
            m_kNorm = model.loadWeight(p + "self_attn.k_norm.weight");
        }
        if (m_cfg.isMoeLayer(index)) {
            m_moe = std::make_unique<MoeLayer>(model, p + m_cfg.moe.prefix);
        } else if (L.fusedGateUp) {
            m_gateUp = make("mlp.gate_up_proj", "gate_up_proj", m_cfg.mlpBias);
            m_gateUp.parts = {{"gate", m_cfg.intermediateSize}, {"up", m_cfg.intermediateSize}};
            m_down = make("mlp.down_proj", "down_proj", m_cfg.mlpBias);
        } else {
            m_gate = make(L.mlpName + ".gate_proj", "gate_proj", m_cfg.mlpBias);
            m_up = make(L.mlpName + ".up_proj", "up_proj", m_cfg.mlpBias);
            m_down = make(L.mlpName + ".down_proj", "down_proj", m_cfg.mlpBias);
        }
        m_inputNorm = model.loadWeight(p + "input_layernorm.weight");
        m_postAttnNorm = model.loadWeight(p + "post_attention_layernorm.weight");
        if (L.sandwichNorms) {
            m_preFfnNorm = model.loadWeight(p + "pre_feedforward_layernorm.weight");
            m_postFfnNorm = model.loadWeight(p + "post_feedforward_layernorm.weight");
        }
    }

    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const SmallForwardGuard threads(x.numel() / x.size(-1), x.size(-1));
        const DecoderLayout& L = m_cfg.layout;
        const at::Tensor a = attend(m_model.norm(x, m_inputNorm), ctx);
        if (!L.sandwichNorms) {
            const at::Tensor x1 = x + a;
            return x1 + mlp(m_model.norm(x1, m_postAttnNorm), ctx);
        }
        // Gemma 2/3: each sublayer's output is normed before the residual add.
        const at::Tensor x1 = x + m_model.norm(a, m_postAttnNorm);
        return x1 + m_model.norm(mlp(m_model.norm(x1, m_preFfnNorm), ctx), m_postFfnNorm);
    }

    std::vector<LinearLayer*> linears() override {
        std::vector<LinearLayer*> out;
        if (m_mla)
            m_mla->appendLinears(out);
        else if (m_cfg.layout.fusedQkv)
            out = {&m_qkv, &m_o};
        else
            out = {&m_q, &m_k, &m_v, &m_o};
        if (m_moe)
            m_moe->appendLinears(out);
        else if (m_cfg.layout.fusedGateUp)
            out.insert(out.end(), {&m_gateUp, &m_down});
        else
            out.insert(out.end(), {&m_gate, &m_up, &m_down});
        return out;
    }

    std::vector<BlockNorm> norms() override {
        const std::string p = "model.layers." + std::to_string(index()) + ".";
        std::vector<BlockNorm> out = {{p + "input_layernorm", &m_inputNorm, nullptr},
                                      {p + "post_attention_layernorm", &m_postAttnNorm, nullptr}};
        if (m_cfg.layout.sandwichNorms) {
            out.push_back({p + "pre_feedforward_layernorm", &m_preFfnNorm, nullptr});
            out.push_back({p + "post_feedforward_layernorm", &m_postFfnNorm, nullptr});
        }
        return out;
    }

    std::vector<std::pair<std::string, int64_t>> routedTokens() const override {
        return m_moe ? m_moe->routedTokens() : std::vector<std::pair<std::string, int64_t>>{};
    }
    void resetRoutedTokens() override {
        if (m_moe)
            m_moe->resetRoutedTokens();
    }
    std::map<std::string, at::Tensor> fusedTensors() const override {
        return m_moe ? m_moe->fusedTensors() : std::map<std::string, at::Tensor>{};
    }

private:
    at::Tensor attend(const at::Tensor& h, const ForwardContext& ctx) {
        if (m_mla)
            return m_mla->forward(h, ctx);
        const int64_t B = h.size(0), T = h.size(1);
        const int64_t nh = m_cfg.numHeads, nkv = m_cfg.numKvHeads, hd = m_cfg.headDim;
        at::Tensor q, k, v;
        if (m_cfg.layout.fusedQkv) {
            // Phi-3: rows [q; k; v] of one projection.
            const at::Tensor qkv = applyLinear(m_qkv, h, ctx);
            q = qkv.narrow(-1, 0, nh * hd);
            k = qkv.narrow(-1, nh * hd, nkv * hd);
            v = qkv.narrow(-1, (nh + nkv) * hd, nkv * hd);
        } else {
            q = applyLinear(m_q, h, ctx);
            k = applyLinear(m_k, h, ctx);
            v = applyLinear(m_v, h, ctx);
        }
        q = q.reshape({B, T, nh, hd});
        k = k.reshape({B, T, nkv, hd});
        if (m_cfg.layout.qkNorm) {
            // Qwen3 / Gemma 3: a per-head norm over head_dim, before RoPE; v is not normed.
            q = m_model.norm(q, m_qNorm);
            k = m_model.norm(k, m_kNorm);
        }
        q = q.transpose(1, 2);
        k = k.transpose(1, 2);
        v = v.reshape({B, T, nkv, hd}).transpose(1, 2);
        const bool slides = m_cfg.slides(index());
        const bool ownRope = ctx.slidingCos.defined() && m_cfg.usesSlidingRope(index());
        const at::Tensor& cos = ownRope ? ctx.slidingCos : ctx.cos;
        const at::Tensor& sin = ownRope ? ctx.slidingSin : ctx.sin;
        const bool rotates = ropes(m_cfg.layout, index());
        if (rotates) {
            q = applyRotary(q, cos, sin, m_cfg.layout.ropeInterleaved);
            k = applyRotary(k, cos, sin, m_cfg.layout.ropeInterleaved);
        }
        if (m_cfg.layout.l2QkNorm && rotates) {
            q = l2Norm(q, m_cfg.normEps);
            k = l2Norm(k, m_cfg.normEps);
        }
        if (m_cfg.layout.tempScale > 0 && !rotates)
            q = temperatureTuned(q, m_cfg.layout);
        const double scale =
            m_cfg.layout.attnScale > 0 ? m_cfg.layout.attnScale : 1.0 / std::sqrt(double(hd));
        const at::Tensor& mask = slides ? ctx.slidingMask : ctx.mask;
        at::Tensor a;
        if (chunked(m_cfg.layout, index()) && T > m_cfg.layout.attentionChunk) {
            // Llama 4's chunked layers (within one chunk they attend as causal layers do)
            a = attention(q, k, v, chunkedMask(ctx.mask, m_cfg.layout.attentionChunk), scale, 0.0);
            return applyLinear(m_o, a.transpose(1, 2).reshape({B, T, nh * hd}), ctx);
        }
        // Sinks (gpt-oss) join the softmax: the materialised scores carry them.
        if (m_sinks.defined())
            a = attentionWithSinks(q, k, v, mask, scale, m_sinks);
        // The fused path has no softcap (Gemma 2 keeps the materialised scores).
        else if (m_cfg.layout.attnSoftcap <= 0)
            a = fusedCausalAttention(q, k, v, scale, slides ? m_cfg.slidingWindow : 0, mask);
        if (!a.defined())
            a = attention(q, k, v, mask, scale, m_cfg.layout.attnSoftcap);
        return applyLinear(m_o, a.transpose(1, 2).reshape({B, T, nh * hd}), ctx);
    }

    at::Tensor mlp(const at::Tensor& h, const ForwardContext& ctx) {
        if (m_moe)
            return m_moe->forward(h, ctx);
        if (m_cfg.layout.fusedGateUp) {
            // Phi-3: rows [gate; up] of one projection.
            const at::Tensor gu = applyLinear(m_gateUp, h, ctx);
            const int64_t I = m_cfg.intermediateSize;
            const at::Tensor g = activation(m_cfg.hiddenAct, gu.narrow(-1, 0, I));
            return applyLinear(m_down, gu.narrow(-1, I, I) * g, ctx);
        }
        const at::Tensor g = activation(m_cfg.hiddenAct, applyLinear(m_gate, h, ctx));
        return applyLinear(m_down, g * applyLinear(m_up, h, ctx), ctx);
    }

    const LlamaStyleModel& m_model;
    const ModelConfig& m_cfg;
    LinearLayer m_q, m_k, m_v, m_qkv, m_o, m_gate, m_up, m_gateUp, m_down;
    std::unique_ptr<MoeLayer> m_moe;
    std::unique_ptr<MlaAttention> m_mla; // DeepSeek-V3's attention instead of q/k/v/o
    at::Tensor m_qNorm, m_kNorm;
    at::Tensor m_sinks; // [nh]: gpt-oss's attention sinks; undefined without
    at::Tensor m_inputNorm, m_postAttnNorm, m_preFfnNorm, m_postFfnNorm;
};

} // namespace

void rotaryTables(const ModelConfig& c, const RopeParameters& rope, int64_t seqLen,
                  const ComputeOptions& compute, at::Tensor& cosOut, at::Tensor& sinOut) {
    const RotaryFrequencies f =
        rotaryFrequencies(rope, c.headDim, c.maxPositions, seqLen, c.source);
    const at::Tensor positions = at::arange(seqLen, at::kLong).to(at::kFloat);
    const at::Tensor freqs = at::outer(positions, f.inverse);
    const at::Tensor emb =
        c.layout.ropeInterleaved ? freqs.repeat_interleave(2, -1) : at::cat({freqs, freqs}, -1);
    at::Tensor cos = emb.cos(), sin = emb.sin();
    if (f.attentionScaling != 1.0) {
        cos = cos * f.attentionScaling;
        sin = sin * f.attentionScaling;
    }
    cosOut = cos.to(compute.device, compute.dtype);
    sinOut = sin.to(compute.device, compute.dtype);
}

at::Tensor LlamaStyleModel::norm(const at::Tensor& x, const at::Tensor& weight) const {
    return m_config.layout.normPlusOne ? rmsNormPlusOne(x, weight, m_config.normEps)
                                       : rmsNorm(x, weight, m_config.normEps);
}

ForwardContext LlamaStyleModel::makeContext(int64_t seqLen) const {
    ForwardContext ctx = DecoderModel::makeContext(seqLen);
    rotaryTables(m_config, m_config.rope, seqLen, m_compute, ctx.cos, ctx.sin);
    if (m_config.slidingRope)
        rotaryTables(m_config, *m_config.slidingRope, seqLen, m_compute, ctx.slidingCos,
                     ctx.slidingSin);
    return ctx;
}

at::Tensor LlamaStyleModel::embed(const at::Tensor& ids) {
    if (!m_embedding.defined())
        m_embedding = loadWeight("model.embed_tokens.weight");
    at::Tensor h = at::embedding(m_embedding, ids.to(m_compute.device));
    if (m_config.layout.embedScale) {
        // Gemma: times sqrt(hidden_size), the factor first rounded to the compute dtype.
        const at::Tensor normalizer =
            at::scalar_tensor(std::sqrt(double(m_config.hiddenSize)), at::kDouble)
                .to(m_compute.dtype)
                .to(m_compute.device);
        h = h * normalizer;
    }
    return h;
}

std::unique_ptr<DecoderBlock> LlamaStyleModel::loadBlock(int index) {
    if (index < 0 || index >= numBlocks())
        throw Error(m_config.source, "num_hidden_layers",
                    "block " + std::to_string(index) + " out of range");
    return finishBlock(std::make_unique<LlamaStyleBlock>(index, *this));
}

at::Tensor LlamaStyleModel::logits(const at::Tensor& hidden) {
    if (!m_finalNorm.defined()) {
        m_finalNorm = loadWeight("model.norm.weight");
        // A weight transform may make the head differ from the embedding (rotation folds the
        // final norm into the head only): then it loads the head on its own.
        if (m_config.tieWordEmbeddings && !hasWeightTransform()) {
            if (!m_embedding.defined())
                m_embedding = loadWeight("model.embed_tokens.weight");
            m_head = m_embedding;
        } else {
            m_head = loadWeight("lm_head.weight");
        }
    }
    at::Tensor out = at::linear(norm(hidden, m_finalNorm), m_head);
    const double cap = m_config.layout.finalSoftcap;
    if (cap > 0)
        out = at::tanh(out / cap) * cap;
    return out.to(at::kFloat);
}

} // namespace qs
