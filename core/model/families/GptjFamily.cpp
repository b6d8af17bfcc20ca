#include "io/JsonFields.h"
#include "model/ParallelFamily.h"
#include "util/Error.h"

namespace qs {

namespace {

// GPT-J (model_type "gptj", its own config keys n_embd, n_head, ...): a parallel block under
// one LayerNorm with bias (ln_1), bias-free q/k/v/out_proj, RoPE on the first rotary_dim
// dimensions of each head in interleaved pairs (2i, 2i + 1) with theta fixed at 10000, fc_in ->
// gelu_new -> fc_out with biases, a biased ln_f and a biased, untied lm_head.
class GptjFamily : public ParallelFamily {
public:
    std::string name() const override { return "gptj"; }
    std::vector<std::string> modelTypes() const override { return {"gptj"}; }
    ParallelNames names() const override {
        ParallelNames n;
        n.embed = "transformer.wte";
        n.layers = "transformer.h";
        n.norm = "ln_1";
        n.attention = "attn";
        n.out = "out_proj";
        n.fcIn = "mlp.fc_in";
        n.fcOut = "mlp.fc_out";
        n.finalNorm = "transformer.ln_f";
        return n;
    }
    std::vector<std::string> knownKeys() const override {
        return {"n_embd", "n_head", "n_layer", "n_inner", "n_positions", "rotary_dim", "rotary",
                "activation_function", "layer_norm_epsilon", "scale_attn_weights",
                // the sequence-classification head's settings; the causal LM has no such head
                "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
                "summary_first_dropout"};
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        c.hiddenSize = f.requiredInt("n_embd", 1, 1 << 20);
        c.numLayers = f.requiredInt("n_layer", 1, 4096);
        c.numHeads = f.requiredInt("n_head", 1, 4096);
        c.numKvHeads = c.numHeads;
        if (c.hiddenSize % c.numHeads != 0)
            throw Error(src, "n_head", "does not divide n_embd");
        c.headDim = c.hiddenSize / c.numHeads;
        // n_inner null or absent: 4 x n_embd, as GPTJMLP builds it
        c.intermediateSize = f.optionalInt("n_inner", 4 * c.hiddenSize, 1, 1 << 22);
        c.maxPositions = f.optionalInt("n_positions", 2048, 1, int64_t(1) << 32);
        c.normEps = f.optionalDouble("layer_norm_epsilon", 1e-5, 0.0, 1.0);
        // transformers sizes its sinusoids by n_embd when rotary_dim is null, which only fits a
        // one-head model: required here.
        if (!f.has("rotary_dim"))
            throw Error(src, "rotary_dim", "required (null rotates nothing consistently)");
        const int64_t rotary = f.requiredInt("rotary_dim", 2, c.headDim);
        c.rope.theta = 10000.0; // hard-coded in GPT-J's create_sinusoidal_positions
        c.rope.partialRotaryFactor = double(rotary) / double(c.headDim);
        if (int64_t(double(c.headDim) * c.rope.partialRotaryFactor) != rotary)
            throw Error(src, "rotary_dim", "not representable as a fraction of the head");
        checkRotary(c, "rotary_dim");
        if (!f.optionalBool("rotary", true))
            throw Error(src, "rotary", "GPT-J without rotary embeddings does not exist");
        if (!f.optionalBool("scale_attn_weights", true))
            throw Error(src, "scale_attn_weights",
                        "false: transformers' GPT-J scales the scores anyway; refusing the "
                        "ambiguity");
        c.hiddenAct = f.optionalString("activation_function", "gelu_new");
        if (c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu" &&
            c.hiddenAct != "gelu_pytorch_tanh" && c.hiddenAct != "relu" && c.hiddenAct != "silu")
            throw Error(src, "activation_function", "unsupported activation '" + c.hiddenAct + "'");
        if (c.tieWordEmbeddings)
            throw Error(src, "tie_word_embeddings",
                        "a tied GPT-J head (embedding weight with lm_head.bias) is not supported");
        c.attentionBias = c.outputBias = false;
        c.mlpBias = true;
        DecoderLayout& L = c.layout;
        L.parallelBlock = L.layerNorm = L.normBias = L.headBias = L.ropeInterleaved = true;
    }
};

} // namespace

const ModelFamily& gptjFamily() {
    static const GptjFamily family;
    return family;
}

} // namespace qs
