#include "model/families/GemmaFamilyBase.h"

#include "io/JsonFields.h"
#include "util/Error.h"

#include <cmath>

namespace qs {

std::vector<std::string> GemmaFamilyBase::knownKeys() const {
    std::vector<std::string> k = LlamaStyleFamily::knownKeys();
    k.insert(k.end(), {"hidden_activation", "query_pre_attn_scalar", "attn_logit_softcapping",
                       "final_logit_softcapping", "sliding_window", "layer_types",
                       "use_bidirectional_attention"});
    return k;
}

void GemmaFamilyBase::parseConfig(const JsonFields& f, ModelConfig& c) const {
    const std::string& src = f.source();
    LlamaStyleFamily::parseConfig(f, c);
    // transformers' Gemma MLP reads hidden_activation; hidden_act, if present, is not used
    c.hiddenAct = f.optionalString("hidden_activation", "gelu_pytorch_tanh");
    if (c.hiddenAct != "gelu_pytorch_tanh" && c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu" &&
        c.hiddenAct != "silu" && c.hiddenAct != "relu")
        throw Error(src, "hidden_activation", "unsupported activation '" + c.hiddenAct + "'");
    if (f.optionalBool("use_bidirectional_attention", false))
        throw Error(src, "use_bidirectional_attention",
                    "bidirectional (encoder) attention is unsupported: Quantscope runs causal "
                    "language models");
    c.tieWordEmbeddings = f.optionalBool("tie_word_embeddings", true); // Gemma's default
    c.layout.normPlusOne = true;
    c.layout.sandwichNorms = true;
    c.layout.embedScale = true;
    // transformers' defaults (256 for both) are those of one model size; refuse to guess
    if (!f.has("head_dim"))
        throw Error(src, "head_dim", "missing (Gemma's head size is not hidden / heads)");
    const double scalar = f.requiredDouble("query_pre_attn_scalar", 1e-6, 1e9);
    c.layout.attnScale = 1.0 / std::sqrt(scalar);
    c.layout.attnSoftcap = f.optionalDouble("attn_logit_softcapping", 0.0, 0.0, 1e9);
    c.layout.finalSoftcap = f.optionalDouble("final_logit_softcapping", 0.0, 0.0, 1e9);
    c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
    parseLayerTypes(f, c);
    if (c.slidingLayer.empty()) {
        const int64_t pattern = defaultSlidingPattern(f);
        for (int64_t i = 0; i < c.numLayers; ++i)
            c.slidingLayer.push_back((i + 1) % pattern != 0);
    }
    for (int64_t i = 0; i < c.numLayers; ++i)
        if (c.slidingLayer[size_t(i)] && c.slidingWindow <= 0)
            throw Error(src, "sliding_window",
                        "layer " + std::to_string(i) + " is a sliding layer but no window is set");
}

} // namespace qs
