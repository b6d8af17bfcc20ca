#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

#include <set>

namespace qs {

namespace {

// Qwen3-MoE: Qwen3 attention (q/k norms) and the Qwen sparse MoE MLP (parseQwenMoe).
class Qwen3MoeFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen3_moe"; }
    std::vector<std::string> modelTypes() const override { return {"qwen3_moe"}; }
    std::vector<std::string> knownKeys() const override {
        return withQwenMoeKeys(withQwenSlidingKeys(LlamaStyleFamily::knownKeys()));
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.layout.qkNorm = true;
        parseQwenSlidingWindow(f, c);
        parseQwenMoe(f, c);
    }
};

} // namespace

std::vector<std::string> withQwenMoeKeys(std::vector<std::string> keys) {
    keys.insert(keys.end(),
                {"num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                 "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers"});
    return keys;
}

// Shared with Qwen1.5-MoE (families/Qwen2MoeFamily.cpp), which routes the same way.
void parseQwenMoe(const JsonFields& f, ModelConfig& c) {
    const std::string& src = f.source();
    MoeConfig& m = c.moe;
    // transformers 5 writes num_local_experts for Qwen3-MoE (mapped from num_experts, the
    // Hub's key); Qwen1.5-MoE keeps num_experts
    const char* expertsKey = f.has("num_local_experts") ? "num_local_experts" : "num_experts";
    if (f.has("num_local_experts") && f.has("num_experts") &&
        f.requiredInt("num_experts", 0, 1 << 16) != f.requiredInt("num_local_experts", 0, 1 << 16))
        throw Error(src, "num_experts", "differs from num_local_experts");
    m.numExperts = f.requiredInt(expertsKey, 1, 1 << 16);
    m.topK = f.requiredInt("num_experts_per_tok", 1, m.numExperts);
    m.expertIntermediate = f.requiredInt("moe_intermediate_size", 1, 1 << 22);
    m.normTopK = f.optionalBool("norm_topk_prob", false);
    m.prefix = "mlp";
    m.routerName = "gate";
    m.gateName = "gate_proj", m.upName = "up_proj", m.downName = "down_proj";
    const int64_t step = f.optionalInt("decoder_sparse_step", 1, 1, 1 << 20);
    std::set<int64_t> denseOnly;
    if (f.has("mlp_only_layers")) {
        const nlohmann::json& l = f.object().at("mlp_only_layers");
        if (!l.is_array())
            throw Error(src, "mlp_only_layers", "expected a list of layer indices");
        for (const nlohmann::json& v : l) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.numLayers)
                throw Error(src, "mlp_only_layers", "not a layer index: " + v.dump());
            denseOnly.insert(v.get<int64_t>());
        }
    }
    m.sparseLayer.clear();
    for (int64_t i = 0; i < c.numLayers; ++i)
        m.sparseLayer.push_back(!denseOnly.count(i) && (i + 1) % step == 0);
}

const ModelFamily& qwen3MoeFamily() {
    static const Qwen3MoeFamily family;
    return family;
}

} // namespace qs
