#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// Rotary position embedding of one attention kind, as transformers 5 writes it in
// `rope_parameters` (older configs: top-level `rope_theta` + `rope_scaling`).
struct RopeParameters {
    std::string type = "default"; // default, linear, dynamic, yarn, llama3, longrope
    double theta = 10000.0;
    double factor = 1.0;
    double partialRotaryFactor = 1.0; // the fraction of head_dim that rotates
    // llama3
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    int64_t originalMaxPositions = 0; // llama3, yarn, longrope (0: max_position_embeddings)
    // yarn
    double betaFast = 32.0;
    double betaSlow = 1.0;
    std::optional<double> attentionFactor; // yarn, longrope: scales cos and sin
    double mscale = 0.0;
    double mscaleAllDim = 0.0;
    bool truncate = true;
    // longrope: per-frequency divisors, short below original_max_position_embeddings
    std::vector<double> shortFactor, longFactor;
};

// How a family lays its decoder out. The shared pre-norm rotary decoder (LlamaStyleModel) reads
// it; each family file (model/families/) sets what differs from Llama.
struct DecoderLayout {
    bool qkNorm = false;        // per-head RMSNorm q_norm / k_norm before RoPE (Qwen3, Gemma 3)
    bool normPlusOne = false;   // RMSNorm scales by (1 + w) (Gemma)
    bool sandwichNorms = false; // post-attention and pre/post-feedforward norms (Gemma 2/3)
    bool embedScale = false;    // embeddings times sqrt(hidden_size) (Gemma)
    bool fusedQkv = false;      // self_attn.qkv_proj = [q; k; v] rows (Phi-3)
    bool fusedGateUp = false;   // mlp.gate_up_proj = [gate; up] rows (Phi-3)
    double attnScale = 0.0;     // 0: head_dim^-0.5; Gemma: query_pre_attn_scalar^-0.5
    double attnSoftcap = 0.0;   // tanh soft-capping of attention scores (0: none)
    double finalSoftcap = 0.0;  // tanh soft-capping of the logits (0: none)
    // The parallel decoders (ParallelModel: GPT-J, Phi-2, Cohere): one norm per block feeds
    // both attention and MLP, h + attn(ln(h)) + mlp(ln(h)); no post-attention norm.
    bool parallelBlock = false;
    bool layerNorm = false;       // LayerNorm (mean subtracted) instead of RMSNorm
    bool normBias = false;        // the LayerNorms carry a bias (GPT-J, Phi-2; not Cohere)
    bool ropeInterleaved = false; // RoPE rotates pairs (2i, 2i+1) (GPT-J, Cohere), not (i, i+d/2)
    bool headBias = false;        // lm_head has a bias (GPT-J, Phi-2)
    double logitScale = 1.0;      // logits times this (Cohere's logit_scale)
    double clipQkv = 0.0;         // the fused q/k/v projection clamped to +-this (DBRX; 0: none)
    // gpt-oss: one learned logit per query head (self_attn.sinks) joins each row's softmax
    // over the keys as an extra column, which is then dropped (no value of its own).
    bool attnSinks = false;
    // Llama 4. ropeLayer: per layer, whether it rotates (empty: every layer; false: a NoPE
    // layer, no RoPE). l2QkNorm: on the rotating layers, q and k each x rsqrt(mean(x^2) + eps)
    // per head, without weight, after RoPE. attentionChunk > 0: the layers chunkedLayer marks
    // attend causally within chunks of attentionChunk positions (key j visible to query i iff
    // j <= i and j / chunk == i / chunk). tempScale > 0: on the NoPE layers q is multiplied by
    // 1 + tempScale * log1p(floor((pos + 1) / tempFloor)) (attn_temperature_tuning).
    std::vector<bool> ropeLayer;
    bool l2QkNorm = false;
    int64_t attentionChunk = 0;
    std::vector<bool> chunkedLayer;
    double tempScale = 0.0;
    double tempFloor = 1.0;
    std::string mlpName = "mlp"; // the dense MLP's module under the block (Llama 4: feed_forward)
};

// How a layer's experts are stored (FusedExperts.h): one tensor per linear, or fused.
enum class ExpertStorage : uint8_t {
    PerExpert,         // experts.{e}.<gate>/<up>/<down>.weight (Mixtral, Qwen, DeepSeek)
    DbrxRows,          // experts.mlp.w1 / v1 / w2 [E x I, H], w2 untransposed (DBRX)
    GateUpHalves,      // experts.gate_up_proj [E, H, 2I] = [gate | up], down_proj [E, I, H]
    GateUpInterleaved, // as GateUpHalves with gate/up columns interleaved, and biases (gpt-oss)
};

// A sparse mixture-of-experts MLP (Mixtral, Qwen3-MoE, Qwen1.5-MoE): a router picks top-k
// experts per token.
struct MoeConfig {
    int64_t numExperts = 0; // 0: a dense model
    int64_t topK = 0;
    int64_t expertIntermediate = 0;
    bool normTopK = true;   // renormalise the chosen experts' probabilities to sum to one
    std::string prefix;     // module under the block: "block_sparse_moe" or "mlp"
    std::string routerName; // "gate"
    std::string gateName, upName, downName; // "w1","w3","w2" or "gate_proj","up_proj","down_proj"
    // The experts' module under the MoE module: "experts", or "experts.mlp" (DBRX); expert e's
    // linears are <expertsPath>.<e>.<gateName|upName|downName> whatever the storage (for fused
    // storage these are AMD Quark's per-expert names), the fused tensors <expertsPath>.<tensor>.
    std::string expertsPath = "experts";
    ExpertStorage storage = ExpertStorage::PerExpert;
    bool expertBias = false;       // the experts' linears carry biases (gpt-oss)
    std::vector<bool> sparseLayer; // per layer: MoE (true) or a dense MLP (Qwen3-MoE mlp_only)
    // A shared expert every token goes through, added to the routed sum (Qwen1.5-MoE:
    // mlp.shared_expert, SwiGLU with the experts' linear names); 0: none.
    int64_t sharedIntermediate = 0;
    std::string sharedName;     // "shared_expert"
    std::string sharedGateName; // "shared_expert_gate": output x sigmoid(x . w); empty: ungated
    // DeepSeek-V3's routing: sigmoid scores instead of a softmax; the router's
    // e_score_correction_bias added to them for the choice only; the experts in numGroups equal
    // groups of which the topKGroups best (by the sum of each group's two best scores) are
    // eligible; the chosen scores (renormalised with normTopK) times routedScaling.
    bool sigmoidScores = false;
    bool correctionBias = false;
    int64_t numGroups = 1;
    int64_t topKGroups = 1;
    double routedScaling = 1.0;
    // gpt-oss's routing: the router carries a bias; the top-k of its logits, then a softmax
    // over those k only (not a softmax over all experts, then the top-k).
    bool routerBias = false;
    bool softmaxAfterTopK = false;
    // gpt-oss's clamped SwiGLU (swigluLimit > 0): gate = min(gate, limit),
    // up = clamp(up, -limit, limit), (up + 1) * gate * sigmoid(swigluAlpha * gate).
    double swigluLimit = 0.0;
    double swigluAlpha = 1.702;
    // Llama 4's routing: the top-k of the router logits; each chosen expert's score is the
    // sigmoid of its logit and scales the expert's input, not its output; the experts' outputs
    // are summed unweighted.
    bool scoreScalesInput = false;
};

// Multi-head latent attention (DeepSeek-V3): q through a low-rank q_a_proj -> q_a_layernorm ->
// q_b_proj (or q_proj when qLoraRank is 0), k and v from one latent (kv_a_proj_with_mqa ->
// kv_a_layernorm -> kv_b_proj); each head's q and k are [nope | rope], the rope part of k one
// per position shared by every head; v has a width of its own.
struct MlaConfig {
    int64_t qLoraRank = 0;
    int64_t kvLoraRank = 0; // 0: not MLA
    int64_t nopeDim = 0;
    int64_t ropeDim = 0;
    int64_t vHeadDim = 0;
    double scale = 0.0; // softmax scale: (nope + rope)^-0.5, times yarn's mscale^2 where it has one
};

// The typed subset of config.json the model families use. Parsed strictly by the family that
// owns the model_type; `raw` keeps the whole file for export.
struct ModelConfig {
    std::string source; // path of the config.json, for error messages
    std::string modelType;
    std::string architecture;
    int64_t hiddenSize = 0;
    int64_t intermediateSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t numKvHeads = 0;
    int64_t headDim = 0;
    int64_t vocabSize = 0;
    int64_t maxPositions = 0;
    double normEps = 1e-5;
    RopeParameters rope;                       // full-attention layers (all layers by default)
    std::optional<RopeParameters> slidingRope; // sliding layers, when they differ (Gemma 3)
    std::string hiddenAct = "silu";
    bool attentionBias = false; // bias on q/k/v (Qwen2: true)
    bool outputBias = false;    // bias on o_proj / out_proj
    bool mlpBias = false;
    bool tieWordEmbeddings = false;
    int64_t slidingWindow = 0;      // 0 = full attention
    std::vector<bool> slidingLayer; // per layer; empty = every layer slides when window > 0
    int64_t bosTokenId = -1;
    int64_t eosTokenId = -1;
    std::string torchDtype = "float32"; // `dtype` (transformers 5) or `torch_dtype`
    DecoderLayout layout;
    MoeConfig moe;
    MlaConfig mla;
    // OPT
    bool doLayerNormBefore = true;
    int64_t wordEmbedProjDim = 0;
    int64_t positionOffset = 0; // OPT's learned positions start at index 2
    int64_t ffnDim = 0;         // OPT fc1 width (intermediateSize mirrors it)
    bool enableBias = true;     // OPT linears and layer norms carry biases
    nlohmann::json raw;

    // Whether layer `i` attends through the sliding window.
    bool slides(int64_t layer) const {
        if (slidingWindow <= 0)
            return false;
        return slidingLayer.empty() || slidingLayer[size_t(layer)];
    }
    bool isMoeLayer(int64_t layer) const {
        return moe.numExperts > 0 && (moe.sparseLayer.empty() || moe.sparseLayer[size_t(layer)]);
    }
    // Sliding-attention layers have their own RoPE when the config gives one (Gemma 3).
    bool usesSlidingRope(int64_t layer) const {
        return slidingRope && !slidingLayer.empty() && slidingLayer[size_t(layer)];
    }
    const RopeParameters& ropeFor(int64_t layer) const {
        return usesSlidingRope(layer) ? *slidingRope : rope;
    }
};

} // namespace qs
