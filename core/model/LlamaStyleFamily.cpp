#include "model/LlamaStyleFamily.h"

#include "io/Checkpoint.h"
#include "io/JsonFields.h"
#include "model/FusedExperts.h"
#include "model/LlamaStyleModel.h"
#include "model/RopeConfig.h"
#include "util/Error.h"
#include "util/Strings.h"

#include <set>

namespace qs {

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
}

ModuleNode inner(const std::string& name, const std::string& kind, int block) {
    return ModuleNode{name, kind, {}, "", 0, block, {}};
}

// gpt-oss's attention sinks: a bare parameter (no ".weight"), one logit per query head, kept
// in full precision; a leaf of kind "sinks" whose name is the tensor's.
ModuleNode sinksLeaf(const ModelConfig& c, const Checkpoint& ckpt, const std::string& name, int i) {
    const TensorInfo* t = ckpt.find(name);
    if (!t)
        throw Error(ckpt.directory(), name, "tensor missing from the checkpoint");
    if (t->shape != std::vector<int64_t>{c.numHeads})
        throw Error(ckpt.fileOf(name).path(), name,
                    "shape " + shapeText(t->shape) + " but expected [" +
                        std::to_string(c.numHeads) + "] (one per attention head)");
    return ModuleNode{name, "sinks", t->shape, dtypeName(t->dtype), t->numel(), i, {}};
}

// q/k/v/o (or the fused qkv_proj) and, for Qwen3 / Gemma 3, the per-head q/k norms.
ModuleNode attentionNode(const ModelConfig& c, const Checkpoint& ckpt, const std::string& p,
                         int i) {
    const int64_t H = c.hiddenSize;
    const int64_t qOut = c.numHeads * c.headDim, kvOut = c.numKvHeads * c.headDim;
    ModuleNode attn = inner(p + ".self_attn", "attention", i);
    const std::string a = p + ".self_attn.";
    if (c.mla.kvLoraRank > 0) {
        // DeepSeek-V3's multi-head latent attention (MlaAttention.h)
        const MlaConfig& m = c.mla;
        const int64_t qk = c.numHeads * (m.nopeDim + m.ropeDim);
        if (m.qLoraRank > 0)
            attn.children = {weightLeaf(ckpt, a + "q_a_proj", "linear", {m.qLoraRank, H}, i),
                             weightLeaf(ckpt, a + "q_a_layernorm", "norm", {m.qLoraRank}, i),
                             weightLeaf(ckpt, a + "q_b_proj", "linear", {qk, m.qLoraRank}, i)};
        else
            attn.children = {weightLeaf(ckpt, a + "q_proj", "linear", {qk, H}, i)};
        const int64_t kv = c.numHeads * (m.nopeDim + m.vHeadDim);
        attn.children.push_back(
            weightLeaf(ckpt, a + "kv_a_proj_with_mqa", "linear", {m.kvLoraRank + m.ropeDim, H}, i));
        attn.children.push_back(weightLeaf(ckpt, a + "kv_a_layernorm", "norm", {m.kvLoraRank}, i));
        attn.children.push_back(weightLeaf(ckpt, a + "kv_b_proj", "linear", {kv, m.kvLoraRank}, i));
        attn.children.push_back(
            weightLeaf(ckpt, a + "o_proj", "linear", {H, c.numHeads * m.vHeadDim}, i));
        return attn;
    }
    if (c.layout.fusedQkv) {
        attn.children.push_back(
            weightLeaf(ckpt, a + "qkv_proj", "linear", {qOut + 2 * kvOut, H}, i, c.attentionBias));
    } else {
        attn.children = {weightLeaf(ckpt, a + "q_proj", "linear", {qOut, H}, i, c.attentionBias),
                         weightLeaf(ckpt, a + "k_proj", "linear", {kvOut, H}, i, c.attentionBias),
                         weightLeaf(ckpt, a + "v_proj", "linear", {kvOut, H}, i, c.attentionBias)};
    }
    if (c.layout.qkNorm) {
        attn.children.push_back(weightLeaf(ckpt, a + "q_norm", "norm", {c.headDim}, i));
        attn.children.push_back(weightLeaf(ckpt, a + "k_norm", "norm", {c.headDim}, i));
    }
    attn.children.push_back(weightLeaf(ckpt, a + "o_proj", "linear", {H, qOut}, i, c.outputBias));
    if (c.layout.attnSinks)
        attn.children.push_back(sinksLeaf(c, ckpt, a + "sinks", i));
    return attn;
}

ModuleNode denseMlpNode(const ModelConfig& c, const Checkpoint& ckpt, const std::string& p, int i) {
    const int64_t H = c.hiddenSize, I = c.intermediateSize;
    const std::string m = p + "." + c.layout.mlpName; // "mlp"; Llama 4: "feed_forward"
    ModuleNode mlp = inner(m, "mlp", i);
    if (c.layout.fusedGateUp)
        mlp.children = {weightLeaf(ckpt, m + ".gate_up_proj", "linear", {2 * I, H}, i, c.mlpBias)};
    else
        mlp.children = {weightLeaf(ckpt, m + ".gate_proj", "linear", {I, H}, i, c.mlpBias),
                        weightLeaf(ckpt, m + ".up_proj", "linear", {I, H}, i, c.mlpBias)};
    mlp.children.push_back(weightLeaf(ckpt, m + ".down_proj", "linear", {H, I}, i, c.mlpBias));
    return mlp;
}

} // namespace

ModuleNode expertsNode(const ModelConfig& c, const Checkpoint& ckpt, const std::string& base,
                       int i) {
    const MoeConfig& m = c.moe;
    const int64_t H = c.hiddenSize, E = m.expertIntermediate;
    const std::string path = base + "." + m.expertsPath;
    ModuleNode experts = inner(path, "experts", i);
    if (m.storage == ExpertStorage::PerExpert) {
        for (int64_t e = 0; e < m.numExperts; ++e) {
            const std::string x = path + "." + std::to_string(e);
            ModuleNode expert = inner(x, "expert", i);
            const bool b = m.expertBias;
            expert.children = {weightLeaf(ckpt, x + "." + m.gateName, "linear", {E, H}, i, b),
                               weightLeaf(ckpt, x + "." + m.upName, "linear", {E, H}, i, b),
                               weightLeaf(ckpt, x + "." + m.downName, "linear", {H, E}, i, b)};
            experts.children.push_back(std::move(expert));
        }
        return experts;
    }
    // Fused: the stored tensors checked against the config, then one leaf per expert linear
    // (the linears the engine cuts out of them, FusedExperts.h), parameters counted once.
    std::string dtype;
    for (const std::string& t : fusedExpertTensors(m.storage, m.expertBias)) {
        const std::string name = path + "." + t;
        const TensorInfo* info = ckpt.find(name);
        if (!info)
            throw Error(ckpt.directory(), name, "tensor missing from the checkpoint");
        const std::vector<int64_t> expected = fusedExpertShape(m.storage, t, m.numExperts, E, H);
        if (info->shape != expected)
            throw Error(ckpt.fileOf(name).path(), name,
                        "shape " + shapeText(info->shape) + " but config.json implies " +
                            shapeText(expected));
        dtype = dtypeName(info->dtype);
    }
    auto leaf = [&](const std::string& name, std::vector<int64_t> shape) {
        const int64_t params = shape[0] * shape[1] + (m.expertBias ? shape[0] : 0);
        return ModuleNode{name, "linear", std::move(shape), dtype, params, i, {}};
    };
    for (int64_t e = 0; e < m.numExperts; ++e) {
        const std::string x = path + "." + std::to_string(e);
        ModuleNode expert = inner(x, "expert", i);
        expert.children = {leaf(x + "." + m.gateName, {E, H}), leaf(x + "." + m.upName, {E, H}),
                           leaf(x + "." + m.downName, {H, E})};
        experts.children.push_back(std::move(expert));
    }
    return experts;
}

// The router and one "expert" node per expert under an "experts" node, which views show
// collapsed: a 128-expert layer would otherwise bury the attention rows.
ModuleNode moeNode(const ModelConfig& c, const Checkpoint& ckpt, const std::string& p, int i) {
    const MoeConfig& m = c.moe;
    const int64_t H = c.hiddenSize;
    const std::string base = p + "." + m.prefix;
    ModuleNode moe = inner(base, "moe", i);
    moe.children.push_back(
        weightLeaf(ckpt, base + "." + m.routerName, "router", {m.numExperts, H}, i, m.routerBias));
    if (m.correctionBias) {
        // a buffer, not a parameter: checked here, not counted
        const std::string b = base + "." + m.routerName + ".e_score_correction_bias";
        const TensorInfo* t = ckpt.find(b);
        if (!t || t->shape != std::vector<int64_t>{m.numExperts})
            throw Error(ckpt.directory(), b,
                        t ? "shape " + shapeText(t->shape) + " but expected [" +
                                std::to_string(m.numExperts) + "]"
                          : std::string("tensor missing from the checkpoint"));
    }
    moe.children.push_back(expertsNode(c, ckpt, base, i));
    if (m.sharedIntermediate > 0) {
        // Qwen1.5-MoE: one more SwiGLU every token goes through, scaled by a one-output gate
        // that, like the router, stays in full precision.
        const int64_t S = m.sharedIntermediate;
        const std::string x = base + "." + m.sharedName;
        ModuleNode shared = inner(x, "mlp", i);
        shared.children = {weightLeaf(ckpt, x + "." + m.gateName, "linear", {S, H}, i),
                           weightLeaf(ckpt, x + "." + m.upName, "linear", {S, H}, i),
                           weightLeaf(ckpt, x + "." + m.downName, "linear", {H, S}, i)};
        moe.children.push_back(std::move(shared));
        if (!m.sharedGateName.empty())
            moe.children.push_back(
                weightLeaf(ckpt, base + "." + m.sharedGateName, "router", {1, H}, i));
    }
    return moe;
}

ScalingTemplate LlamaStyleFamily::scalingTemplate(const ModelConfig& c) const {
    if (c.layout.normPlusOne || c.layout.sandwichNorms)
        throw Error(c.source, "model.layers.0.input_layernorm",
                    "Gemma's RMSNorm scales by (1 + w) and its sandwich norms differ from "
                    "Llama's; no scaling template yet, so SmoothQuant, AWQ and AutoSmoothQuant "
                    "cannot run on it");
    if (c.mla.kvLoraRank > 0)
        throw Error(c.source, "model.layers.0.self_attn.kv_b_proj",
                    "multi-head latent attention has no scaling template yet (v comes out of "
                    "kv_b_proj with k's nope part); SmoothQuant, AWQ and AutoSmoothQuant cannot "
                    "run on this model");
    // v_proj -> o_proj and up_proj -> down_proj would scale a slice of a fused projection's
    // rows, which no group here expresses yet.
    if (c.layout.fusedQkv || c.layout.fusedGateUp)
        throw Error(c.source, "model.layers.0.self_attn.qkv_proj",
                    "fused projections (Phi-3) have no scaling template yet; SmoothQuant, AWQ "
                    "and AutoSmoothQuant cannot run on this model");
    // The experts' gate/up share post_attention_layernorm with the router, which must stay
    // unscaled (Quark smooths only the experts' down_proj there).
    // (named at the first MoE layer: Llama 4's layer 0 is dense)
    int64_t firstMoe = 0;
    while (firstMoe + 1 < c.numLayers && !c.isMoeLayer(firstMoe))
        ++firstMoe;
    if (c.moe.numExperts > 0)
        throw Error(c.source,
                    "model.layers." + std::to_string(firstMoe) + "." + c.moe.prefix + ".experts",
                    "mixture-of-experts blocks have no scaling template yet; SmoothQuant, AWQ "
                    "and AutoSmoothQuant cannot run on this model");
    return llamaScalingTemplate();
}

std::vector<std::string> LlamaStyleFamily::knownKeys() const {
    return {"hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
            "rms_norm_eps",
            "rope_theta",
            "rope_scaling",
            "rope_parameters",
            "hidden_act",
            "attention_bias",
            "mlp_bias",
            "pretraining_tp"};
}

void parseLayerTypes(const JsonFields& f, ModelConfig& c) {
    const std::string& src = f.source();
    if (!f.has("layer_types"))
        return;
    const nlohmann::json& lt = f.object().at("layer_types");
    if (!lt.is_array() || int64_t(lt.size()) != c.numLayers)
        throw Error(src, "layer_types",
                    "expected a list of num_hidden_layers (" + std::to_string(c.numLayers) +
                        ") layer types");
    c.slidingLayer.clear();
    for (size_t i = 0; i < lt.size(); ++i) {
        const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : lt[i].dump();
        if (t != "full_attention" && t != "sliding_attention")
            throw Error(src, "layer_types[" + std::to_string(i) + "]",
                        "unknown layer type '" + t +
                            "' (supported: full_attention, sliding_attention)");
        c.slidingLayer.push_back(t == "sliding_attention");
    }
}

void LlamaStyleFamily::parseConfig(const JsonFields& f, ModelConfig& c) const {
    const std::string& src = f.source();
    c.hiddenSize = f.requiredInt("hidden_size", 1, 1 << 20);
    c.intermediateSize = f.requiredInt("intermediate_size", 1, 1 << 22);
    c.numLayers = f.requiredInt("num_hidden_layers", 1, 4096);
    c.numHeads = f.requiredInt("num_attention_heads", 1, 4096);
    c.numKvHeads = f.optionalInt("num_key_value_heads", c.numHeads, 1, c.numHeads);
    if (c.numHeads % c.numKvHeads != 0)
        throw Error(src, "num_key_value_heads",
                    "num_attention_heads (" + std::to_string(c.numHeads) +
                        ") is not a multiple of it (" + std::to_string(c.numKvHeads) + ")");
    // null or absent head_dim (Mixtral writes null, Phi-3 and Qwen2 leave it out): hidden/heads
    if (f.has("head_dim")) {
        c.headDim = f.requiredInt("head_dim", 2, 4096);
    } else {
        if (c.hiddenSize % c.numHeads != 0)
            throw Error(src, "hidden_size", "not divisible by num_attention_heads and no head_dim");
        c.headDim = c.hiddenSize / c.numHeads;
    }
    if (c.headDim % 2 != 0)
        throw Error(src, "head_dim", "rotary embeddings need an even head dimension");
    c.maxPositions = f.optionalInt("max_position_embeddings", 2048, 1, int64_t(1) << 32);
    c.normEps = f.optionalDouble("rms_norm_eps", defaultNormEps(), 0.0, 1.0);
    parseRope(f, c);
    const int64_t rotary = int64_t(double(c.headDim) * c.rope.partialRotaryFactor);
    if (rotary % 2 != 0 || rotary < 2)
        throw Error(src, "partial_rotary_factor",
                    "rotates " + std::to_string(rotary) + " of head_dim " +
                        std::to_string(c.headDim) + " dimensions; needs an even count");
    c.hiddenAct = f.optionalString("hidden_act", "silu");
    if (c.hiddenAct != "silu" && c.hiddenAct != "swish" && c.hiddenAct != "gelu" &&
        c.hiddenAct != "gelu_pytorch_tanh" && c.hiddenAct != "gelu_new" && c.hiddenAct != "relu")
        throw Error(src, "hidden_act", "unsupported activation '" + c.hiddenAct + "'");
    c.attentionBias = f.optionalBool("attention_bias", false);
    c.outputBias = c.attentionBias;
    c.mlpBias = f.optionalBool("mlp_bias", false);
}

ModuleNode weightLeaf(const Checkpoint& ckpt, const std::string& module, const std::string& kind,
                      const std::vector<int64_t>& expected, int blockIndex, bool withBias) {
    const std::string name = module + ".weight";
    const TensorInfo* t = ckpt.find(name);
    if (!t)
        throw Error(ckpt.directory(), name, "tensor missing from the checkpoint");
    if (t->shape != expected)
        throw Error(ckpt.fileOf(name).path(), name,
                    "shape " + shapeText(t->shape) + " but config.json implies " +
                        shapeText(expected));
    ModuleNode n;
    n.name = module;
    n.kind = kind;
    n.shape = t->shape;
    n.dtype = dtypeName(t->dtype);
    n.parameters = t->numel();
    n.blockIndex = blockIndex;
    if (withBias) {
        const std::string biasName = module + ".bias";
        const TensorInfo* b = ckpt.find(biasName);
        if (!b)
            throw Error(ckpt.directory(), biasName, "bias missing from the checkpoint");
        if (b->shape != std::vector<int64_t>{expected[0]})
            throw Error(ckpt.fileOf(biasName).path(), biasName,
                        "shape " + shapeText(b->shape) + " but expected [" +
                            std::to_string(expected[0]) + "]");
        n.parameters += b->numel();
    }
    return n;
}

int64_t sumParameters(ModuleNode& node) {
    if (node.children.empty())
        return node.parameters;
    int64_t total = 0;
    for (ModuleNode& c : node.children)
        total += sumParameters(c);
    node.parameters = total;
    return total;
}

namespace {

void usedTensors(const ModuleNode& n, std::set<std::string>& out) {
    if (!n.children.empty()) {
        for (const ModuleNode& c : n.children)
            usedTensors(c, out);
        return;
    }
    if (n.dtype == "tied" || n.shape.empty())
        return;
    if (n.kind == "sinks") { // a bare parameter: the leaf's name is the tensor's
        out.insert(n.name);
        return;
    }
    out.insert(n.name + ".weight");
    int64_t numel = 1;
    for (int64_t d : n.shape)
        numel *= d;
    if (n.parameters > numel)
        out.insert(n.name + ".bias");
}

} // namespace

bool isFusedExpertTensor(const ModelConfig& c, const std::string& name) {
    for (const std::string& t : fusedExpertTensors(c.moe.storage, c.moe.expertBias))
        if (endsWith(name, "." + c.moe.expertsPath + "." + t))
            return true;
    return false;
}

void checkEveryTensorUsed(const ModuleNode& tree, const ModelConfig& c, const Checkpoint& ckpt) {
    std::set<std::string> used;
    usedTensors(tree, used);
    const std::string invFreq = ".rotary_emb.inv_freq";
    for (const std::string& name : ckpt.tensorNames()) {
        // checkpoints saved from the bare base model lack the "model." prefix (Checkpoint::find)
        if (used.count(name) || used.count("model." + name) ||
            (c.tieWordEmbeddings && name == "lm_head.weight"))
            continue;
        if (endsWith(name, invFreq))
            continue;
        // DeepSeek-V3's router bias is a buffer (transformers' parameter count leaves it out,
        // so the tree does too); the router reads it (MoeLayer)
        if (c.moe.correctionBias &&
            endsWith(name, "." + c.moe.routerName + ".e_score_correction_bias"))
            continue;
        // experts stored fused: read (and their shapes checked) by the experts node, whose
        // leaves are the per-expert linears cut out of them
        if (c.moe.storage != ExpertStorage::PerExpert && isFusedExpertTensor(c, name))
            continue;
        // GPT-J's causal-mask buffers, which transformers before 4.30 saved with the weights
        // (GPT-J's attention has no biases: these are masks, not parameters)
        if (c.modelType == "gptj" &&
            (endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias")))
            continue;
        throw Error(ckpt.fileOf(name).path(), name,
                    "tensor not used by a '" + c.modelType +
                        "' model with this config.json (a bias or layout the config does not "
                        "announce?); refusing rather than computing without it");
    }
}

ModuleNode LlamaStyleFamily::buildTree(const ModelConfig& c, const Checkpoint& ckpt) const {
    const int64_t H = c.hiddenSize, V = c.vocabSize;
    ModuleNode root = inner("model", "model", -1);
    root.children.push_back(weightLeaf(ckpt, "model.embed_tokens", "embedding", {V, H}, -1));
    for (int i = 0; i < int(c.numLayers); ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        ModuleNode block = inner(p, "block", i);
        block.children = {weightLeaf(ckpt, p + ".input_layernorm", "norm", {H}, i),
                          attentionNode(c, ckpt, p, i),
                          weightLeaf(ckpt, p + ".post_attention_layernorm", "norm", {H}, i)};
        if (c.layout.sandwichNorms)
            block.children.push_back(
                weightLeaf(ckpt, p + ".pre_feedforward_layernorm", "norm", {H}, i));
        block.children.push_back(c.isMoeLayer(i) ? moeNode(c, ckpt, p, i)
                                                 : denseMlpNode(c, ckpt, p, i));
        if (c.layout.sandwichNorms)
            block.children.push_back(
                weightLeaf(ckpt, p + ".post_feedforward_layernorm", "norm", {H}, i));
        root.children.push_back(std::move(block));
    }
    root.children.push_back(weightLeaf(ckpt, "model.norm", "norm", {H}, -1));
    if (c.tieWordEmbeddings) {
        // Tied: the head is the embedding matrix; shown, but its parameters are not counted twice.
        root.children.push_back(ModuleNode{"lm_head", "head", {V, H}, "tied", 0, -1, {}});
    } else {
        root.children.push_back(weightLeaf(ckpt, "lm_head", "head", {V, H}, -1));
    }
    sumParameters(root);
    checkEveryTensorUsed(root, c, ckpt);
    return root;
}

std::unique_ptr<DecoderModel> LlamaStyleFamily::create(const ModelConfig& config,
                                                       std::shared_ptr<const Checkpoint> ckpt,
                                                       const ComputeOptions& compute) const {
    return std::make_unique<LlamaStyleModel>(config, std::move(ckpt), compute);
}

} // namespace qs
