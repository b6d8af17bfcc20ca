#include "io/Checkpoint.h"
#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "model/OptModel.h"
#include "util/Error.h"

namespace qs {

namespace {

class OptFamily : public ModelFamily {
public:
    std::string name() const override { return "opt"; }
    std::vector<std::string> modelTypes() const override { return {"opt"}; }

    // Quark's OPT groups. Exact only for the pre-norm layout (the norms precede the linears)
    // and a ReLU between fc1 and fc2 (relu(x / s) = relu(x) / s for s > 0; GELU is not).
    ScalingTemplate scalingTemplate(const ModelConfig& c) const override {
        if (!c.doLayerNormBefore)
            throw Error(c.source, "model.decoder.layers.0.self_attn_layer_norm",
                        "post-norm OPT (do_layer_norm_before false): the norms follow the "
                        "linears, so there is nothing to fold a scale into");
        ScalingTemplate t;
        t.groups = {{"self_attn_layer_norm",
                     {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                     "self_attn.q_proj",
                     "self_attn"},
                    {"self_attn.v_proj", {"self_attn.out_proj"}, "self_attn.out_proj", ""},
                    {"final_layer_norm", {"fc1"}, "fc1", ""}};
        if (c.hiddenAct == "relu")
            t.groups.push_back({"fc1", {"fc2"}, "fc2", ""});
        t.moduleOutputs = {{"self_attn", "self_attn.out_proj"}};
        return t;
    }

    std::vector<std::string> knownKeys() const override {
        return {"hidden_size",
                "ffn_dim",
                "num_hidden_layers",
                "num_attention_heads",
                "max_position_embeddings",
                "word_embed_proj_dim",
                "do_layer_norm_before",
                "activation_function",
                "enable_bias",
                "_remove_final_layer_norm",
                "layer_norm_elementwise_affine"};
    }

    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        c.hiddenSize = f.requiredInt("hidden_size", 1, 1 << 20);
        c.ffnDim = f.requiredInt("ffn_dim", 1, 1 << 22);
        c.intermediateSize = c.ffnDim;
        c.numLayers = f.requiredInt("num_hidden_layers", 1, 4096);
        c.numHeads = f.requiredInt("num_attention_heads", 1, 4096);
        c.numKvHeads = c.numHeads;
        if (c.hiddenSize % c.numHeads != 0)
            throw Error(src, "num_attention_heads", "does not divide hidden_size");
        c.headDim = c.hiddenSize / c.numHeads;
        c.maxPositions = f.requiredInt("max_position_embeddings", 1, int64_t(1) << 24);
        c.wordEmbedProjDim = f.optionalInt("word_embed_proj_dim", c.hiddenSize, 1, 1 << 20);
        c.doLayerNormBefore = f.optionalBool("do_layer_norm_before", true);
        c.hiddenAct = f.optionalString("activation_function", "relu");
        if (c.hiddenAct != "relu" && c.hiddenAct != "gelu")
            throw Error(src, "activation_function", "unsupported '" + c.hiddenAct + "'");
        c.enableBias = f.optionalBool("enable_bias", true);
        c.attentionBias = c.outputBias = c.mlpBias = c.enableBias;
        c.tieWordEmbeddings = f.optionalBool("tie_word_embeddings", true); // OPT's default
        c.positionOffset = 2;
        if (!f.optionalBool("layer_norm_elementwise_affine", true))
            throw Error(src, "layer_norm_elementwise_affine",
                        "OPT without layer-norm weights is unsupported");
        if (f.optionalBool("_remove_final_layer_norm", false))
            throw Error(src, "_remove_final_layer_norm", "OPT-350m style configs are unsupported");
    }

    ModuleNode buildTree(const ModelConfig& c, const Checkpoint& ckpt) const override {
        const int64_t H = c.hiddenSize, F = c.ffnDim, V = c.vocabSize, P = c.wordEmbedProjDim;
        const bool b = c.enableBias;
        ModuleNode root{"model", "model", {}, "", 0, -1, {}};
        root.children.push_back(
            weightLeaf(ckpt, "model.decoder.embed_tokens", "embedding", {V, P}, -1));
        root.children.push_back(weightLeaf(ckpt, "model.decoder.embed_positions", "embedding",
                                           {c.maxPositions + c.positionOffset, H}, -1));
        if (P != H)
            root.children.push_back(
                weightLeaf(ckpt, "model.decoder.project_in", "linear", {H, P}, -1));
        for (int i = 0; i < int(c.numLayers); ++i) {
            const std::string p = "model.decoder.layers." + std::to_string(i);
            ModuleNode block{p, "block", {}, "", 0, i, {}};
            ModuleNode attn{p + ".self_attn", "attention", {}, "", 0, i, {}};
            attn.children = {weightLeaf(ckpt, p + ".self_attn.q_proj", "linear", {H, H}, i, b),
                             weightLeaf(ckpt, p + ".self_attn.k_proj", "linear", {H, H}, i, b),
                             weightLeaf(ckpt, p + ".self_attn.v_proj", "linear", {H, H}, i, b),
                             weightLeaf(ckpt, p + ".self_attn.out_proj", "linear", {H, H}, i, b)};
            ModuleNode mlp{p + ".mlp", "mlp", {}, "", 0, i, {}};
            mlp.children = {weightLeaf(ckpt, p + ".fc1", "linear", {F, H}, i, b),
                            weightLeaf(ckpt, p + ".fc2", "linear", {H, F}, i, b)};
            block.children = {weightLeaf(ckpt, p + ".self_attn_layer_norm", "norm", {H}, i, true),
                              attn, weightLeaf(ckpt, p + ".final_layer_norm", "norm", {H}, i, true),
                              mlp};
            root.children.push_back(std::move(block));
        }
        if (c.doLayerNormBefore)
            root.children.push_back(
                weightLeaf(ckpt, "model.decoder.final_layer_norm", "norm", {H}, -1, true));
        if (P != H)
            root.children.push_back(
                weightLeaf(ckpt, "model.decoder.project_out", "linear", {P, H}, -1));
        if (c.tieWordEmbeddings)
            root.children.push_back(ModuleNode{"lm_head", "head", {V, P}, "tied", 0, -1, {}});
        else
            root.children.push_back(weightLeaf(ckpt, "lm_head", "head", {V, P}, -1));
        sumParameters(root);
        checkEveryTensorUsed(root, c, ckpt);
        return root;
    }

    std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                         std::shared_ptr<const Checkpoint> ckpt,
                                         const ComputeOptions& compute) const override {
        return std::make_unique<OptModel>(config, std::move(ckpt), compute);
    }
};

} // namespace

const ModelFamily& optFamily() {
    static const OptFamily family;
    return family;
}

} // namespace qs
