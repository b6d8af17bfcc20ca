#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Mixtral: the Mistral decoder with a sparse MoE MLP in every layer
// (block_sparse_moe.gate router; block_sparse_moe.experts.{e}.w1 gate, w3 up, w2 down, each of
// intermediate_size); the top-k probabilities are always renormalised.
class MixtralFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "mixtral"; }
    std::vector<std::string> modelTypes() const override { return {"mixtral"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        // router_jitter_noise multiplies the router input by noise in training only
        k.insert(k.end(), {"sliding_window", "num_local_experts", "num_experts_per_tok",
                           "router_jitter_noise"});
        return k;
    }
    double defaultNormEps() const override { return 1e-5; }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
        MoeConfig& m = c.moe;
        m.numExperts = f.requiredInt("num_local_experts", 1, 1 << 16);
        m.topK = f.requiredInt("num_experts_per_tok", 1, m.numExperts);
        m.expertIntermediate = c.intermediateSize;
        m.normTopK = true;
        m.prefix = "block_sparse_moe";
        m.routerName = "gate";
        m.gateName = "w1", m.upName = "w3", m.downName = "w2";
    }
};

} // namespace

const ModelFamily& mixtralFamily() {
    static const MixtralFamily family;
    return family;
}

} // namespace qs
