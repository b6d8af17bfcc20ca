#include "io/JsonFields.h"
#include "model/ParallelFamily.h"
#include "model/RopeConfig.h"
#include "util/Error.h"

namespace qs {

namespace {

// Command-R (model_type "cohere"): a parallel block under one bias-free LayerNorm
// (input_layernorm: mean subtracted, weight only), q/k/v/o_proj (biased with attention_bias),
// RoPE over the whole head in interleaved pairs (2i, 2i + 1), a SwiGLU MLP, the final
// bias-free LayerNorm model.norm, the head tied to the embedding by default and the logits
// multiplied by logit_scale.
class CohereFamily : public ParallelFamily {
public:
    std::string name() const override { return "cohere"; }
    std::vector<std::string> modelTypes() const override { return {"cohere"}; }
    ParallelNames names() const override {
        ParallelNames n;
        n.embed = "model.embed_tokens";
        n.layers = "model.layers";
        n.norm = "input_layernorm";
        n.attention = "self_attn";
        n.out = "o_proj";
        n.finalNorm = "model.norm";
        return n; // fcIn/fcOut empty: the gated mlp.gate_proj / up_proj / down_proj
    }
    std::vector<std::string> knownKeys() const override {
        return {"hidden_size",         "intermediate_size",   "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
                "layer_norm_eps",      "rope_theta",          "rope_scaling",
                "rope_parameters",     "hidden_act",          "attention_bias",
                "logit_scale",         "use_qk_norm"};
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
        c.maxPositions = f.optionalInt("max_position_embeddings", 8192, 1, int64_t(1) << 32);
        c.normEps = f.optionalDouble("layer_norm_eps", 1e-5, 0.0, 1.0);
        parseRope(f, c);
        // Cohere's apply_rotary_pos_emb multiplies the whole head by cos/sin: a partial table
        // would not broadcast in transformers either.
        if (c.rope.partialRotaryFactor != 1.0)
            throw Error(src, "partial_rotary_factor", "Cohere rotates the whole head");
        checkRotary(c, "rope_parameters");
        c.hiddenAct = f.optionalString("hidden_act", "silu");
        if (c.hiddenAct != "silu" && c.hiddenAct != "swish" && c.hiddenAct != "gelu" &&
            c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu_pytorch_tanh" &&
            c.hiddenAct != "relu")
            throw Error(src, "hidden_act", "unsupported activation '" + c.hiddenAct + "'");
        if (f.optionalBool("use_qk_norm", false))
            throw Error(src, "use_qk_norm",
                        "Command-R+'s per-head q/k LayerNorms are not computed by Quantscope yet");
        // CohereConfig ties the head unless told otherwise
        c.tieWordEmbeddings = f.optionalBool("tie_word_embeddings", true);
        c.attentionBias = c.outputBias = f.optionalBool("attention_bias", false);
        c.mlpBias = false;
        DecoderLayout& L = c.layout;
        L.parallelBlock = L.layerNorm = L.ropeInterleaved = true;
        L.logitScale = f.optionalDouble("logit_scale", 0.0625, 1e-9, 1e9);
    }
};

} // namespace

const ModelFamily& cohereFamily() {
    static const CohereFamily family;
    return family;
}

} // namespace qs
