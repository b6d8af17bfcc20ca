#include "model/MoeLayer.h"

#include "model/FusedExperts.h"
#include "model/LlamaStyleModel.h"

#include <tuple>

namespace qs {

MoeLayer::MoeLayer(const DecoderModel& model, const std::string& prefix) : m_cfg(model.config()) {
    const MoeConfig& m = m_cfg.moe;
    m_router = model.loadWeight(prefix + "." + m.routerName + ".weight");
    if (m.routerBias)
        m_routerBias = model.loadWeight(prefix + "." + m.routerName + ".bias");
    if (m.correctionBias)
        m_correction = model.loadWeight(prefix + "." + m.routerName + ".e_score_correction_bias");
    auto make = [&](const std::string& name, const std::string& kind, bool routed) {
        LinearLayer l;
        l.name = name;
        l.kind = kind;
        l.weight = model.loadWeight(name + ".weight");
        if (routed && m.expertBias) // experts with biases stored per expert (ModelLoader.cpp)
            l.bias = model.loadWeight(name + ".bias");
        l.routed = routed;
        return l;
    };
    auto expert = [&](const std::string& name, bool routed) {
        Expert x;
        x.name = name;
        x.gate = make(x.name + "." + m.gateName, m.gateName, routed);
        x.up = make(x.name + "." + m.upName, m.upName, routed);
        x.down = make(x.name + "." + m.downName, m.downName, routed);
        return x;
    };
    const std::string experts = prefix + "." + m.expertsPath;
    if (m.storage == ExpertStorage::PerExpert) {
        for (int64_t e = 0; e < m.numExperts; ++e)
            m_experts.push_back(expert(experts + "." + std::to_string(e), true));
    } else {
        // Fused: each expert's slices become linears of their own (FusedExperts.h); the stored
        // tensors are released once cut.
        m_fusedPath = experts;
        std::map<std::string, at::Tensor> fused;
        for (const std::string& t : fusedExpertTensors(m.storage, m.expertBias))
            fused[t] = model.loadWeight(experts + "." + t);
        auto slice = [&](const std::string& name, const std::string& kind, at::Tensor w,
                         at::Tensor b) {
            LinearLayer l;
            l.name = name;
            l.kind = kind;
            l.weight = std::move(w);
            l.bias = std::move(b);
            l.routed = true;
            l.storedIn = experts;
            return l;
        };
        for (int64_t e = 0; e < m.numExperts; ++e) {
            ExpertSlices s = sliceExpert(m.storage, fused, e, m.numExperts);
            Expert x;
            x.name = experts + "." + std::to_string(e);
            x.gate = slice(x.name + "." + m.gateName, m.gateName, s.gate, s.gateBias);
            x.up = slice(x.name + "." + m.upName, m.upName, s.up, s.upBias);
            x.down = slice(x.name + "." + m.downName, m.downName, s.down, s.downBias);
            m_experts.push_back(std::move(x));
        }
    }
    if (m.sharedIntermediate > 0) {
        m_shared = expert(prefix + "." + m.sharedName, false);
        if (!m.sharedGateName.empty())
            m_sharedGate = model.loadWeight(prefix + "." + m.sharedGateName + ".weight");
    }
}

void MoeLayer::route(const at::Tensor& flat, at::Tensor& weights, at::Tensor& chosen) const {
    // DeepSeek-V3's router (transformers' DeepseekV3TopkRouter), in float32 as there
    const MoeConfig& m = m_cfg.moe;
    const at::Tensor scores = at::sigmoid(at::linear(flat.to(at::kFloat), m_router.to(at::kFloat)));
    at::Tensor choice = m_correction.defined() ? scores + m_correction.to(at::kFloat) : scores;
    if (m.numGroups > 1) {
        // a group's score is the sum of its two best; experts outside the topKGroups best
        // groups get 0 (not -inf, as transformers masks them)
        const int64_t per = m.numExperts / m.numGroups;
        const at::Tensor grouped = choice.view({-1, m.numGroups, per});
        const at::Tensor groupScores = std::get<0>(grouped.topk(2, -1)).sum(-1);
        const at::Tensor best = std::get<1>(groupScores.topk(m.topKGroups, -1));
        const at::Tensor keep = at::zeros_like(groupScores).scatter_(1, best, 1.0);
        const at::Tensor mask =
            keep.unsqueeze(-1).expand({-1, m.numGroups, per}).reshape({-1, m.numExperts});
        choice = choice.masked_fill(mask.eq(0), 0.0);
    }
    chosen = std::get<1>(choice.topk(m.topK, -1));
    weights = scores.gather(1, chosen); // the scores themselves: the bias only chooses
    if (m.normTopK)
        weights = weights / (weights.sum(-1, /*keepdim=*/true) + 1e-20);
    weights = weights * m.routedScaling;
}

void MoeLayer::routeTopKSoftmax(const at::Tensor& flat, at::Tensor& weights,
                                at::Tensor& chosen) const {
    // transformers' GptOssTopKRouter: biased logits in the hidden dtype, top-k, softmax of those
    const at::Tensor logits = at::linear(flat, m_router, m_routerBias);
    at::Tensor top;
    std::tie(top, chosen) = logits.topk(m_cfg.moe.topK, -1);
    weights = at::softmax(top, -1);
}

void MoeLayer::routeTopLogits(const at::Tensor& flat, at::Tensor& weights,
                              at::Tensor& chosen) const {
    // transformers' Llama4Router: the logits in the compute dtype, the top-k chosen by them,
    // sigmoid in float32 (the unchosen get sigmoid(-inf) = 0, their experts a zero input)
    at::Tensor top;
    std::tie(top, chosen) = at::linear(flat, m_router).topk(m_cfg.moe.topK, -1);
    weights = at::sigmoid(top.to(at::kFloat));
}

at::Tensor MoeLayer::swiglu(Expert& ex, const at::Tensor& x, const ForwardContext& ctx) const {
    if (m_cfg.moe.swigluLimit > 0)
        return clampedSwiglu(ex, x, ctx);
    const at::Tensor g = activation(m_cfg.hiddenAct, runLinear(ex.gate, x, ctx));
    return runLinear(ex.down, g * runLinear(ex.up, x, ctx), ctx);
}

at::Tensor MoeLayer::clampedSwiglu(Expert& ex, const at::Tensor& x,
                                   const ForwardContext& ctx) const {
    // transformers' GptOssExperts._apply_gate, then down_proj with its bias
    const double limit = m_cfg.moe.swigluLimit;
    const at::Tensor g = at::clamp_max(runLinear(ex.gate, x, ctx), limit);
    const at::Tensor u = at::clamp(runLinear(ex.up, x, ctx), -limit, limit);
    const at::Tensor glu = g * at::sigmoid(g * m_cfg.moe.swigluAlpha);
    return runLinear(ex.down, (u + 1) * glu, ctx);
}

at::Tensor MoeLayer::forward(const at::Tensor& x, const ForwardContext& ctx) {
    const int64_t H = x.size(-1);
    const at::Tensor flat = x.reshape({-1, H});
    at::Tensor weights, chosen; // [N, k]
    if (m_cfg.moe.sigmoidScores) {
        route(flat, weights, chosen);
    } else if (m_cfg.moe.softmaxAfterTopK) {
        routeTopKSoftmax(flat, weights, chosen);
    } else if (m_cfg.moe.scoreScalesInput) {
        routeTopLogits(flat, weights, chosen);
    } else {
        const at::Tensor probs = at::softmax(at::linear(flat, m_router), -1, at::kFloat);
        std::tie(weights, chosen) = probs.topk(m_cfg.moe.topK, -1);
        if (m_cfg.moe.normTopK)
            weights = weights / weights.sum(-1, /*keepdim=*/true);
    }
    weights = weights.to(x.scalar_type());
    at::Tensor out = at::zeros_like(flat);
    for (size_t e = 0; e < m_experts.size(); ++e) {
        const at::Tensor hit = chosen.eq(int64_t(e));               // [N, k]
        const at::Tensor rows = hit.any(-1).nonzero().select(1, 0); // tokens routed to e
        const int64_t n = rows.size(0);
        // An expert no token reached contributes nothing; its linears see no call, so
        // observers never record an empty batch.
        if (n == 0)
            continue;
        Expert& ex = m_experts[e];
        ex.routed += n;
        const at::Tensor xe = flat.index_select(0, rows);
        const at::Tensor we =
            (weights * hit.to(weights.scalar_type())).sum(-1).index_select(0, rows);
        if (m_cfg.moe.scoreScalesInput) // Llama 4: the score scales the expert's input
            out.index_add_(0, rows, swiglu(ex, xe * we.unsqueeze(1), ctx));
        else
            out.index_add_(0, rows, swiglu(ex, xe, ctx) * we.unsqueeze(1));
    }
    if (m_shared) {
        // transformers: routed sum + sigmoid(gate(x)) * shared_expert(x), one scalar per token
        at::Tensor shared = swiglu(*m_shared, flat, ctx);
        if (m_sharedGate.defined())
            shared = at::sigmoid(at::linear(flat, m_sharedGate)) * shared;
        out = out + shared;
    }
    return out.view(x.sizes());
}

void MoeLayer::appendLinears(std::vector<LinearLayer*>& out) {
    for (Expert& e : m_experts) {
        out.push_back(&e.gate);
        out.push_back(&e.up);
        out.push_back(&e.down);
    }
    if (m_shared)
        out.insert(out.end(), {&m_shared->gate, &m_shared->up, &m_shared->down});
}

std::map<std::string, at::Tensor> MoeLayer::fusedTensors() const {
    std::map<std::string, at::Tensor> out;
    if (m_fusedPath.empty())
        return out;
    std::vector<ExpertSlices> slices;
    for (const Expert& e : m_experts)
        slices.push_back(ExpertSlices{e.gate.weight, e.up.weight, e.down.weight, e.gate.bias,
                                      e.up.bias, e.down.bias});
    for (auto& [name, t] : fuseExperts(m_cfg.moe.storage, slices))
        out[m_fusedPath + "." + name] = std::move(t);
    return out;
}

std::vector<std::pair<std::string, int64_t>> MoeLayer::routedTokens() const {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const Expert& e : m_experts)
        out.emplace_back(e.name, e.routed);
    return out;
}

void MoeLayer::resetRoutedTokens() {
    for (Expert& e : m_experts)
        e.routed = 0;
}

} // namespace qs
