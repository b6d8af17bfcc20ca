#include "model/LlamaStyleFamily.h"

#include "io/Checkpoint.h"
#include "io/JsonFields.h"
#include "model/LlamaStyleModel.h"
#include "util/Error.h"

namespace qs {

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
}

RopeScaling parseRopeScaling(const nlohmann::json& j, const std::string& source) {
    const JsonFields f(j, source);
    RopeScaling rs;
    rs.type = f.has("rope_type") ? f.requiredString("rope_type") : f.optionalString("type", "");
    if (rs.type == "default")
        return rs;
    if (rs.type != "linear" && rs.type != "llama3")
        throw Error(source, "rope_scaling.rope_type",
                    "unsupported rope scaling '" + rs.type + "' (supported: linear, llama3)");
    rs.factor = f.requiredDouble("factor", 1e-6, 1e6);
    if (rs.type == "llama3") {
        rs.lowFreqFactor = f.requiredDouble("low_freq_factor", 1e-6, 1e6);
        rs.highFreqFactor = f.requiredDouble("high_freq_factor", 1e-6, 1e6);
        rs.originalMaxPositions = f.requiredInt("original_max_position_embeddings", 1, 1 << 30);
        if (rs.highFreqFactor <= rs.lowFreqFactor)
            throw Error(source, "rope_scaling.high_freq_factor", "must exceed low_freq_factor");
    }
    return rs;
}

} // namespace

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
    c.normEps = f.optionalDouble("rms_norm_eps", 1e-6, 0.0, 1.0);
    c.ropeTheta = f.optionalDouble("rope_theta", 10000.0, 1.0, 1e12);
    if (f.has("rope_scaling")) {
        RopeScaling rs = parseRopeScaling(f.object().at("rope_scaling"), src);
        if (rs.type != "default")
            c.ropeScaling = rs;
    }
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

ModuleNode LlamaStyleFamily::buildTree(const ModelConfig& c, const Checkpoint& ckpt) const {
    const int64_t H = c.hiddenSize, I = c.intermediateSize, V = c.vocabSize;
    const int64_t qOut = c.numHeads * c.headDim, kvOut = c.numKvHeads * c.headDim;
    ModuleNode root{"model", "model", {}, "", 0, -1, {}};
    root.children.push_back(weightLeaf(ckpt, "model.embed_tokens", "embedding", {V, H}, -1));
    for (int i = 0; i < int(c.numLayers); ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        ModuleNode block{p, "block", {}, "", 0, i, {}};
        ModuleNode attn{p + ".self_attn", "attention", {}, "", 0, i, {}};
        attn.children = {
            weightLeaf(ckpt, p + ".self_attn.q_proj", "linear", {qOut, H}, i, c.attentionBias),
            weightLeaf(ckpt, p + ".self_attn.k_proj", "linear", {kvOut, H}, i, c.attentionBias),
            weightLeaf(ckpt, p + ".self_attn.v_proj", "linear", {kvOut, H}, i, c.attentionBias),
            weightLeaf(ckpt, p + ".self_attn.o_proj", "linear", {H, qOut}, i, c.outputBias)};
        ModuleNode mlp{p + ".mlp", "mlp", {}, "", 0, i, {}};
        mlp.children = {weightLeaf(ckpt, p + ".mlp.gate_proj", "linear", {I, H}, i, c.mlpBias),
                        weightLeaf(ckpt, p + ".mlp.up_proj", "linear", {I, H}, i, c.mlpBias),
                        weightLeaf(ckpt, p + ".mlp.down_proj", "linear", {H, I}, i, c.mlpBias)};
        block.children = {weightLeaf(ckpt, p + ".input_layernorm", "norm", {H}, i), attn,
                          weightLeaf(ckpt, p + ".post_attention_layernorm", "norm", {H}, i), mlp};
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
    return root;
}

std::unique_ptr<DecoderModel> LlamaStyleFamily::create(const ModelConfig& config,
                                                       std::shared_ptr<const Checkpoint> ckpt,
                                                       const ComputeOptions& compute) const {
    return std::make_unique<LlamaStyleModel>(config, std::move(ckpt), compute);
}

} // namespace qs
