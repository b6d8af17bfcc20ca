#include "io/JsonFields.h"
#include "model/ParallelFamily.h"
#include "model/RopeConfig.h"
#include "util/Error.h"

namespace qs {

namespace {

// Phi-1/1.5/2 (model_type "phi"): a parallel block under one LayerNorm with bias
// (input_layernorm), biased q/k/v and `dense` output projection, RoPE (rotate_half) on the
// first int(head_dim * partial_rotary_factor) dimensions, fc1 -> gelu_new -> fc2 with biases, a
// biased final_layernorm and a biased, untied lm_head.
class PhiFamily : public ParallelFamily {
public:
    std::string name() const override { return "phi"; }
    std::vector<std::string> modelTypes() const override { return {"phi"}; }
    ParallelNames names() const override {
        ParallelNames n;
        n.embed = "model.embed_tokens";
        n.layers = "model.layers";
        n.norm = "input_layernorm";
        n.attention = "self_attn";
        n.out = "dense";
        n.fcIn = "mlp.fc1";
        n.fcOut = "mlp.fc2";
        n.finalNorm = "model.final_layernorm";
        return n;
    }
    std::vector<std::string> knownKeys() const override {
        return {"hidden_size",           "intermediate_size",
                "num_hidden_layers",     "num_attention_heads",
                "num_key_value_heads",   "max_position_embeddings",
                "layer_norm_eps",        "rope_theta",
                "rope_scaling",          "rope_parameters",
                "partial_rotary_factor", "hidden_act",
                "qk_layernorm"};
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        c.hiddenSize = f.requiredInt("hidden_size", 1, 1 << 20);
        c.intermediateSize = f.requiredInt("intermediate_size", 1, 1 << 22);
        c.numLayers = f.requiredInt("num_hidden_layers", 1, 4096);
        c.numHeads = f.requiredInt("num_attention_heads", 1, 4096);
        c.numKvHeads = f.optionalInt("num_key_value_heads", c.numHeads, 1, c.numHeads);
        if (c.numHeads % c.numKvHeads != 0)
            throw Error(src, "num_key_value_heads", "does not divide num_attention_heads");
        if (c.hiddenSize % c.numHeads != 0)
            throw Error(src, "num_attention_heads", "does not divide hidden_size");
        c.headDim = c.hiddenSize / c.numHeads;
        c.maxPositions = f.optionalInt("max_position_embeddings", 2048, 1, int64_t(1) << 32);
        c.normEps = f.optionalDouble("layer_norm_eps", 1e-5, 0.0, 1.0);
        parseRope(f, c);
        // PhiConfig's default rotates half of each head when neither spelling gives the factor.
        // A top-level factor beside rope_parameters (parseRope reads it only beside
        // rope_scaling) applies unless rope_parameters gives its own.
        const nlohmann::json& j = f.object();
        const bool inRope = f.has("rope_parameters") && j.at("rope_parameters").is_object() &&
                            j.at("rope_parameters").contains("partial_rotary_factor");
        if (!inRope)
            c.rope.partialRotaryFactor = f.optionalDouble("partial_rotary_factor", 0.5, 1e-6, 1.0);
        checkRotary(c, "partial_rotary_factor");
        c.hiddenAct = f.optionalString("hidden_act", "gelu_new");
        if (c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu" &&
            c.hiddenAct != "gelu_pytorch_tanh" && c.hiddenAct != "relu" && c.hiddenAct != "silu")
            throw Error(src, "hidden_act", "unsupported activation '" + c.hiddenAct + "'");
        if (f.optionalBool("qk_layernorm", false))
            throw Error(src, "qk_layernorm",
                        "per-head q/k LayerNorms of Phi are not computed by Quantscope yet");
        if (c.tieWordEmbeddings)
            throw Error(src, "tie_word_embeddings",
                        "a tied Phi head (embedding weight with lm_head.bias) is not supported");
        c.attentionBias = c.outputBias = c.mlpBias = true;
        DecoderLayout& L = c.layout;
        L.parallelBlock = L.layerNorm = L.normBias = L.headBias = true;
    }
};

} // namespace

const ModelFamily& phiFamily() {
    static const PhiFamily family;
    return family;
}

} // namespace qs
