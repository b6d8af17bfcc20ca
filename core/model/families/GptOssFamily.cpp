#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

#include <algorithm>

namespace qs {

namespace {

// gpt-oss (model_type gpt_oss, transformers' GptOssForCausalLM): a pre-norm RMSNorm decoder
// whose attention has biases on q/k/v/o and one learned sink logit per head
// (self_attn.sinks: an extra softmax column, dropped after), layers alternating sliding and
// full attention (layer_types; sliding first by default), rotate-half RoPE (yarn by default),
// and a MoE on every layer: the router (mlp.router, with a bias) takes the top-k of its logits
// and a softmax over those k; the experts are stored fused (mlp.experts.gate_up_proj
// [E, H, 2I] with gate/up columns interleaved, down_proj [E, I, H], both with biases) and
// apply a clamped SwiGLU, (clamp(up, -l, l) + 1) * g * sigmoid(alpha * g) with g = min(gate, l)
// (l: swiglu_limit, alpha: swiglu_alpha), then down_proj; hidden_act is not read.
class GptOssFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "gpt_oss"; }
    std::vector<std::string> modelTypes() const override { return {"gpt_oss"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        // GptOssConfig has no mlp_bias (the experts always carry biases) nor pretraining_tp
        k.erase(std::remove_if(
                    k.begin(), k.end(),
                    [](const std::string& s) { return s == "mlp_bias" || s == "pretraining_tp"; }),
                k.end());
        k.insert(k.end(), {"sliding_window", "layer_types", "num_local_experts",
                           "num_experts_per_tok", "swiglu_alpha", "swiglu_limit"});
        return k;
    }
    double defaultNormEps() const override { return 1e-5; }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        LlamaStyleFamily::parseConfig(f, c);
        // GptOssConfig's defaults where config.json leaves a key out
        c.attentionBias = f.optionalBool("attention_bias", true);
        c.outputBias = c.attentionBias; // o_proj follows attention_bias
        c.mlpBias = false;
        if (!f.has("rope_parameters") && !f.has("rope_scaling")) {
            // transformers fills in yarn (factor 32, beta 32/1, original 4096, truncate false)
            RopeParameters& r = c.rope;
            r.type = "yarn";
            r.factor = 32.0;
            r.betaFast = 32.0;
            r.betaSlow = 1.0;
            r.originalMaxPositions = 4096;
            r.truncate = false;
        }
        const bool theta =
            f.has("rope_theta") ||
            (f.has("rope_parameters") && f.object().at("rope_parameters").is_object() &&
             f.object().at("rope_parameters").contains("rope_theta"));
        if (!theta)
            c.rope.theta = 150000.0; // GptOssConfig.default_theta
        c.slidingWindow = f.has("sliding_window")
                              ? f.requiredInt("sliding_window", 1, int64_t(1) << 32)
                              : (f.object().contains("sliding_window") ? 0 : 128);
        if (f.has("layer_types")) {
            parseLayerTypes(f, c);
        } else {
            // transformers: sliding on even layers, full on odd ones
            c.slidingLayer.clear();
            for (int64_t i = 0; i < c.numLayers; ++i)
                c.slidingLayer.push_back(i % 2 == 0);
        }
        c.layout.attnSinks = true;

        MoeConfig& m = c.moe;
        m.numExperts = f.requiredInt("num_local_experts", 1, 1 << 16);
        m.topK = f.optionalInt("num_experts_per_tok", 4, 1, m.numExperts);
        m.expertIntermediate = c.intermediateSize;
        m.normTopK = false; // the softmax over the top-k already sums to one
        m.softmaxAfterTopK = true;
        m.routerBias = true;
        m.prefix = "mlp";
        m.routerName = "router";
        m.gateName = "gate_proj", m.upName = "up_proj", m.downName = "down_proj";
        m.expertsPath = "experts";
        m.storage = ExpertStorage::GateUpInterleaved;
        m.expertBias = true;
        m.swigluAlpha = f.optionalDouble("swiglu_alpha", 1.702, -1e6, 1e6);
        m.swigluLimit = f.optionalDouble("swiglu_limit", 7.0, 0.0, 1e12);
        if (m.swigluLimit <= 0)
            throw Error(src, "swiglu_limit",
                        "must be positive (the clamp of gpt-oss's SwiGLU: gate <= limit, "
                        "-limit <= up <= limit)");
    }
};

} // namespace

const ModelFamily& gptOssFamily() {
    static const GptOssFamily family;
    return family;
}

} // namespace qs
