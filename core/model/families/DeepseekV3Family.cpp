#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

#include <cmath>

namespace qs {

namespace {

// DeepSeek-V3 (and R1): a pre-norm RMSNorm decoder with multi-head latent attention
// (MlaAttention.h; RoPE on the rope part only, in interleaved pairs with rope_interleave) and,
// from layer first_k_dense_replace on, a MoE of n_routed_experts with sigmoid scores, the
// router's e_score_correction_bias for the choice, group-limited top-k (n_group, topk_group),
// weights renormalised (norm_topk_prob) and times routed_scaling_factor, plus ungated shared
// experts (mlp.shared_experts, n_shared_experts x moe_intermediate_size wide).
class DeepseekV3Family : public LlamaStyleFamily {
public:
    std::string name() const override { return "deepseek_v3"; }
    std::vector<std::string> modelTypes() const override { return {"deepseek_v3"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        // num_nextn_predict_layers: the multi-token-prediction layers are not part of the
        // causal LM's forward (transformers leaves them out; their tensors would be refused
        // as unused). ep_size: expert parallelism; aux_loss_alpha, seq_aux: training only.
        k.insert(k.end(), {"q_lora_rank",
                           "kv_lora_rank",
                           "qk_nope_head_dim",
                           "qk_rope_head_dim",
                           "qk_head_dim",
                           "v_head_dim",
                           "rope_interleave",
                           "first_k_dense_replace",
                           "moe_intermediate_size",
                           "n_routed_experts",
                           "n_shared_experts",
                           "num_experts_per_tok",
                           "n_group",
                           "topk_group",
                           "norm_topk_prob",
                           "routed_scaling_factor",
                           "scoring_func",
                           "topk_method",
                           "moe_layer_freq",
                           "num_nextn_predict_layers",
                           "ep_size",
                           "aux_loss_alpha",
                           "seq_aux"});
        return k;
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        LlamaStyleFamily::parseConfig(f, c);
        if (c.attentionBias)
            throw Error(src, "attention_bias",
                        "biases on DeepSeek-V3's attention projections are not supported");
        if (f.optionalString("scoring_func", "sigmoid") != "sigmoid")
            throw Error(src, "scoring_func", "only DeepSeek-V3's sigmoid scoring is supported");
        if (f.optionalString("topk_method", "noaux_tc") != "noaux_tc")
            throw Error(src, "topk_method",
                        "only noaux_tc (DeepSeek-V3's group-limited choice with the correction "
                        "bias) is supported");
        if (f.optionalInt("moe_layer_freq", 1, 1, 1 << 20) != 1)
            throw Error(src, "moe_layer_freq",
                        "transformers' DeepSeek-V3 puts a MoE on every layer from "
                        "first_k_dense_replace on; another frequency is not supported");

        MlaConfig& a = c.mla;
        // null q_lora_rank (DeepSeek-V2-Lite style): q_proj straight from the hidden state
        a.qLoraRank = f.has("q_lora_rank") ? f.requiredInt("q_lora_rank", 1, 1 << 20) : 0;
        a.kvLoraRank = f.requiredInt("kv_lora_rank", 1, 1 << 20);
        a.nopeDim = f.requiredInt("qk_nope_head_dim", 1, 4096);
        a.ropeDim = f.requiredInt("qk_rope_head_dim", 2, 4096);
        a.vHeadDim = f.requiredInt("v_head_dim", 1, 4096);
        if (a.ropeDim % 2 != 0)
            throw Error(src, "qk_rope_head_dim", "rotary embeddings need an even dimension");
        const int64_t qk = a.nopeDim + a.ropeDim;
        if (f.has("qk_head_dim") && f.requiredInt("qk_head_dim", 1, 8192) != qk)
            throw Error(src, "qk_head_dim", "differs from qk_nope_head_dim + qk_rope_head_dim");
        // transformers writes head_dim = qk_rope_head_dim: the width RoPE's tables are built for
        if (f.has("head_dim") && c.headDim != a.ropeDim)
            throw Error(src, "head_dim", "differs from qk_rope_head_dim");
        c.headDim = a.ropeDim;
        if (c.numKvHeads != c.numHeads)
            throw Error(src, "num_key_value_heads",
                        "multi-head latent attention has one k and v per query head");
        // transformers: qk_head_dim^-0.5, times yarn's mscale(factor, mscale_all_dim)^2
        a.scale = 1.0 / std::sqrt(double(qk));
        if (c.rope.type != "default" && c.rope.mscaleAllDim != 0 && c.rope.factor > 1) {
            const double m = 0.1 * c.rope.mscaleAllDim * std::log(c.rope.factor) + 1.0;
            a.scale *= m * m;
        }
        c.layout.ropeInterleaved = f.optionalBool("rope_interleave", true);

        MoeConfig& m = c.moe;
        m.numExperts = f.requiredInt("n_routed_experts", 1, 1 << 16);
        m.topK = f.requiredInt("num_experts_per_tok", 1, m.numExperts);
        m.expertIntermediate = f.requiredInt("moe_intermediate_size", 1, 1 << 22);
        m.normTopK = f.optionalBool("norm_topk_prob", true);
        m.routedScaling = f.optionalDouble("routed_scaling_factor", 1.0, 0.0, 1e6);
        m.numGroups = f.optionalInt("n_group", 1, 1, m.numExperts);
        m.topKGroups = f.optionalInt("topk_group", 1, 1, m.numGroups);
        if (m.numExperts % m.numGroups != 0 || m.numExperts / m.numGroups < 2)
            throw Error(src, "n_group",
                        "n_routed_experts must split into groups of at least two (a group "
                        "scores by its two best experts)");
        if (m.topK > m.topKGroups * (m.numExperts / m.numGroups))
            throw Error(src, "num_experts_per_tok", "more experts than the topk_group groups hold");
        m.sigmoidScores = true;
        m.correctionBias = true;
        m.prefix = "mlp";
        m.routerName = "gate";
        m.gateName = "gate_proj", m.upName = "up_proj", m.downName = "down_proj";
        const int64_t shared =
            f.has("n_shared_experts") ? f.requiredInt("n_shared_experts", 0, 1 << 16) : 0;
        m.sharedIntermediate = shared * m.expertIntermediate;
        m.sharedName = "shared_experts";
        m.sharedGateName.clear(); // every token, ungated
        const int64_t dense = f.optionalInt("first_k_dense_replace", 0, 0, c.numLayers);
        for (int64_t i = 0; i < c.numLayers; ++i)
            m.sparseLayer.push_back(i >= dense);
    }
};

} // namespace

const ModelFamily& deepseekV3Family() {
    static const DeepseekV3Family family;
    return family;
}

} // namespace qs
