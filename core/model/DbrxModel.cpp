#include "model/DbrxModel.h"

#include "model/CausalAttention.h"
#include "model/ForwardThreads.h"
#include "model/LlamaStyleModel.h"
#include "model/MoeLayer.h"
#include "model/Rope.h"
#include "util/Error.h"

#include <cmath>

namespace qs {

namespace {

class DbrxBlock : public DecoderBlock {
public:
    DbrxBlock(int index, const DbrxModel& model)
        : DecoderBlock(index), m_model(model), m_cfg(model.config()) {
        const std::string p = DbrxModel::blockPrefix(index) + "norm_attn_norm.";
        auto make = [&](const std::string& sub, const std::string& kind) {
            LinearLayer l;
            l.name = p + sub;
            l.kind = kind;
            l.weight = model.loadWeight(l.name + ".weight");
            return l;
        };
        const int64_t hd = m_cfg.headDim;
        m_qkv = make("attn.Wqkv", "Wqkv");
        m_qkv.parts = {
            {"q", m_cfg.numHeads * hd}, {"k", m_cfg.numKvHeads * hd}, {"v", m_cfg.numKvHeads * hd}};
        m_out = make("attn.out_proj", "out_proj");
        m_norm1 = model.loadWeight(p + "norm_1.weight");
        m_norm2 = model.loadWeight(p + "norm_2.weight");
        m_moe = std::make_unique<MoeLayer>(model, DbrxModel::blockPrefix(index) + m_cfg.moe.prefix);
    }

    at::Tensor forward(const at::Tensor& x, const ForwardContext& ctx) override {
        const SmallForwardGuard threads(x.numel() / x.size(-1), x.size(-1));
        const at::Tensor h = x + attend(m_model.norm(x, m_norm1), ctx);
        return h + m_moe->forward(m_model.norm(h, m_norm2), ctx);
    }

    std::vector<LinearLayer*> linears() override {
        std::vector<LinearLayer*> out{&m_qkv, &m_out};
        m_moe->appendLinears(out);
        return out;
    }

    std::vector<BlockNorm> norms() override {
        const std::string p = DbrxModel::blockPrefix(index()) + "norm_attn_norm.";
        return {{p + "norm_1", &m_norm1, nullptr}, {p + "norm_2", &m_norm2, nullptr}};
    }

    std::vector<std::pair<std::string, int64_t>> routedTokens() const override {
        return m_moe->routedTokens();
    }
    void resetRoutedTokens() override { m_moe->resetRoutedTokens(); }
    std::map<std::string, at::Tensor> fusedTensors() const override {
        return m_moe->fusedTensors();
    }

private:
    at::Tensor attend(const at::Tensor& h, const ForwardContext& ctx) {
        const int64_t B = h.size(0), T = h.size(1);
        const int64_t nh = m_cfg.numHeads, nkv = m_cfg.numKvHeads, hd = m_cfg.headDim;
        at::Tensor qkv = applyLinear(m_qkv, h, ctx);
        // clip_qkv bounds q, k and v alike, after the hook saw the projection's output
        if (m_cfg.layout.clipQkv > 0)
            qkv = qkv.clamp(-m_cfg.layout.clipQkv, m_cfg.layout.clipQkv);
        at::Tensor q = qkv.narrow(-1, 0, nh * hd).reshape({B, T, nh, hd}).transpose(1, 2);
        at::Tensor k = qkv.narrow(-1, nh * hd, nkv * hd).reshape({B, T, nkv, hd}).transpose(1, 2);
        const at::Tensor v =
            qkv.narrow(-1, (nh + nkv) * hd, nkv * hd).reshape({B, T, nkv, hd}).transpose(1, 2);
        q = applyRotary(q, ctx.cos, ctx.sin, false);
        k = applyRotary(k, ctx.cos, ctx.sin, false);
        const double scale = 1.0 / std::sqrt(double(hd));
        at::Tensor a = fusedCausalAttention(q, k, v, scale, 0, ctx.mask);
        if (!a.defined())
            a = attention(q, k, v, ctx.mask, scale);
        return applyLinear(m_out, a.transpose(1, 2).reshape({B, T, nh * hd}), ctx);
    }

    const DbrxModel& m_model;
    const ModelConfig& m_cfg;
    LinearLayer m_qkv, m_out;
    at::Tensor m_norm1, m_norm2;
    std::unique_ptr<MoeLayer> m_moe;
};

} // namespace

std::string DbrxModel::blockPrefix(int index) {
    return "transformer.blocks." + std::to_string(index) + ".";
}

at::Tensor DbrxModel::norm(const at::Tensor& x, const at::Tensor& weight) const {
    return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, weight.to(at::kFloat), {},
                          m_config.normEps)
        .to(x.scalar_type());
}

ForwardContext DbrxModel::makeContext(int64_t seqLen) const {
    ForwardContext ctx = DecoderModel::makeContext(seqLen);
    rotaryTables(m_config, m_config.rope, seqLen, m_compute, ctx.cos, ctx.sin);
    return ctx;
}

at::Tensor DbrxModel::embed(const at::Tensor& ids) {
    if (!m_embedding.defined())
        m_embedding = loadWeight("transformer.wte.weight");
    return at::embedding(m_embedding, ids.to(m_compute.device));
}

std::unique_ptr<DecoderBlock> DbrxModel::loadBlock(int index) {
    if (index < 0 || index >= numBlocks())
        throw Error(m_config.source, "n_layers",
                    "block " + std::to_string(index) + " out of range");
    return finishBlock(std::make_unique<DbrxBlock>(index, *this));
}

at::Tensor DbrxModel::logits(const at::Tensor& hidden) {
    if (!m_finalNorm.defined()) {
        m_finalNorm = loadWeight("transformer.norm_f.weight");
        if (m_config.tieWordEmbeddings && !hasWeightTransform()) {
            if (!m_embedding.defined())
                m_embedding = loadWeight("transformer.wte.weight");
            m_head = m_embedding;
        } else {
            m_head = loadWeight("lm_head.weight");
        }
    }
    return at::linear(norm(hidden, m_finalNorm), m_head).to(at::kFloat);
}

} // namespace qs
