#include "model/MlaAttention.h"

#include "model/LlamaStyleModel.h"
#include "model/Rope.h"

namespace qs {

namespace {

// transformers' DeepseekV3RMSNorm for q_a_layernorm and kv_a_layernorm is built with its
// default eps, not rms_norm_eps.
constexpr double kLowRankNormEps = 1e-6;

} // namespace

MlaAttention::MlaAttention(const DecoderModel& model, const std::string& prefix)
    : m_cfg(model.config()) {
    auto make = [&](const std::string& sub) {
        LinearLayer l;
        l.name = prefix + "." + sub;
        l.kind = sub;
        l.weight = model.loadWeight(l.name + ".weight");
        return l; // bias-free: the family refuses attention_bias
    };
    if (m_cfg.mla.qLoraRank > 0) {
        m_qA = make("q_a_proj");
        m_qNorm = model.loadWeight(prefix + ".q_a_layernorm.weight");
        m_qB = make("q_b_proj");
    } else {
        m_q = make("q_proj");
    }
    m_kvA = make("kv_a_proj_with_mqa");
    m_kvNorm = model.loadWeight(prefix + ".kv_a_layernorm.weight");
    m_kvB = make("kv_b_proj");
    m_o = make("o_proj");
}

at::Tensor MlaAttention::forward(const at::Tensor& x, const ForwardContext& ctx) {
    const MlaConfig& m = m_cfg.mla;
    const int64_t B = x.size(0), T = x.size(1), nh = m_cfg.numHeads;
    const int64_t qk = m.nopeDim + m.ropeDim;
    const at::Tensor qFlat =
        m.qLoraRank > 0
            ? runLinear(m_qB, rmsNorm(runLinear(m_qA, x, ctx), m_qNorm, kLowRankNormEps), ctx)
            : runLinear(m_q, x, ctx);
    const at::Tensor q = qFlat.reshape({B, T, nh, qk}).transpose(1, 2);
    const at::Tensor ckv = runLinear(m_kvA, x, ctx);
    const at::Tensor latent = ckv.narrow(-1, 0, m.kvLoraRank);
    at::Tensor kRope = ckv.narrow(-1, m.kvLoraRank, m.ropeDim).reshape({B, 1, T, m.ropeDim});
    const at::Tensor kv = runLinear(m_kvB, rmsNorm(latent, m_kvNorm, kLowRankNormEps), ctx)
                              .reshape({B, T, nh, m.nopeDim + m.vHeadDim})
                              .transpose(1, 2);
    const bool interleaved = m_cfg.layout.ropeInterleaved;
    const at::Tensor qRope =
        applyRotary(q.narrow(-1, m.nopeDim, m.ropeDim), ctx.cos, ctx.sin, interleaved);
    kRope = applyRotary(kRope, ctx.cos, ctx.sin, interleaved).expand({B, nh, T, m.ropeDim});
    const at::Tensor qFull = at::cat({q.narrow(-1, 0, m.nopeDim), qRope}, -1);
    const at::Tensor kFull = at::cat({kv.narrow(-1, 0, m.nopeDim), kRope}, -1);
    const at::Tensor v = kv.narrow(-1, m.nopeDim, m.vHeadDim);
    // v is narrower than q and k: the materialising path, which any widths fit
    const at::Tensor a = attention(qFull, kFull, v, ctx.mask, m.scale);
    return runLinear(m_o, a.transpose(1, 2).reshape({B, T, nh * m.vHeadDim}), ctx);
}

void MlaAttention::appendLinears(std::vector<LinearLayer*>& out) {
    if (m_cfg.mla.qLoraRank > 0)
        out.insert(out.end(), {&m_qA, &m_qB});
    else
        out.push_back(&m_q);
    out.insert(out.end(), {&m_kvA, &m_kvB, &m_o});
}

} // namespace qs
