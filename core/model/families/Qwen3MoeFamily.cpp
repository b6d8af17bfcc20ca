#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

#include <set>

namespace qs {

namespace {

// Qwen3-MoE: Qwen3 attention (q/k norms) and a sparse MoE MLP (mlp.gate router,
// mlp.experts.{e}.gate_proj/up_proj/down_proj of width moe_intermediate_size) on layer i when
// i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0; a dense MLP of
// intermediate_size elsewhere. Top-k probabilities renormalised only with norm_topk_prob.
class Qwen3MoeFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen3_moe"; }
    std::vector<std::string> modelTypes() const override { return {"qwen3_moe"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = withQwenSlidingKeys(LlamaStyleFamily::knownKeys());
        k.insert(k.end(), {"num_experts", "num_local_experts", "num_experts_per_tok",
                           "moe_intermediate_size", "norm_topk_prob", "decoder_sparse_step",
                           "mlp_only_layers"});
        return k;
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        LlamaStyleFamily::parseConfig(f, c);
        c.layout.qkNorm = true;
        parseQwenSlidingWindow(f, c);
        MoeConfig& m = c.moe;
        // transformers 5 writes num_local_experts (mapped from num_experts, the Hub's key)
        const char* expertsKey = f.has("num_local_experts") ? "num_local_experts" : "num_experts";
        if (f.has("num_local_experts") && f.has("num_experts") &&
            f.requiredInt("num_experts", 0, 1 << 16) !=
                f.requiredInt("num_local_experts", 0, 1 << 16))
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
                if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                    v.get<int64_t>() >= c.numLayers)
                    throw Error(src, "mlp_only_layers", "not a layer index: " + v.dump());
                denseOnly.insert(v.get<int64_t>());
            }
        }
        for (int64_t i = 0; i < c.numLayers; ++i)
            m.sparseLayer.push_back(!denseOnly.count(i) && (i + 1) % step == 0);
    }
};

} // namespace

const ModelFamily& qwen3MoeFamily() {
    static const Qwen3MoeFamily family;
    return family;
}

} // namespace qs
