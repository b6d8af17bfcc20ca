#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Phi-3: the Llama decoder with fused projections, self_attn.qkv_proj = rows [q; k; v] and
// mlp.gate_up_proj = rows [gate; up]; a sliding window on every layer when sliding_window is
// set; LongRoPE ("longrope", once "su") for the long-context variants.
class Phi3Family : public LlamaStyleFamily {
public:
    std::string name() const override { return "phi3"; }
    std::vector<std::string> modelTypes() const override { return {"phi3"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        k.insert(k.end(),
                 {"sliding_window", "original_max_position_embeddings", "partial_rotary_factor"});
        return k;
    }
    double defaultNormEps() const override { return 1e-5; }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.layout.fusedQkv = true;
        c.layout.fusedGateUp = true;
        c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
    }
};

} // namespace

const ModelFamily& phi3Family() {
    static const Phi3Family family;
    return family;
}

} // namespace qs
