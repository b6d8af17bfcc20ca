#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Qwen1.5-MoE (model_type qwen2_moe): Qwen2 attention (q/k/v biases, as qkv_bias says), the
// Qwen sparse MoE (parseQwenMoe: transformers' default leaves the top-k unnormalised) and, in
// every MoE layer, a shared expert (mlp.shared_expert, SwiGLU of
// shared_expert_intermediate_size) on every token, scaled by sigmoid(mlp.shared_expert_gate(x))
// and added to the routed sum.
class Qwen2MoeFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen2_moe"; }
    std::vector<std::string> modelTypes() const override { return {"qwen2_moe"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k =
            withQwenMoeKeys(withQwenSlidingKeys(LlamaStyleFamily::knownKeys()));
        k.insert(k.end(), {"qkv_bias", "shared_expert_intermediate_size"});
        return k;
    }
    // llama.cpp's qwen2moe (io/GgufArchitecture.h); no rotation (a mixture of experts), no
    // ONNX graph.
    FamilyCapabilities capabilities() const override {
        return {/*rotation=*/false, /*onnx=*/false, /*gguf=*/"qwen2moe"};
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        // transformers 5's Qwen2MoeConfig.qkv_bias (default true; older versions always had
        // the biases); never on o_proj or the MLPs
        c.attentionBias = f.optionalBool("qkv_bias", true);
        c.outputBias = false;
        c.mlpBias = false;
        parseQwenSlidingWindow(f, c);
        parseQwenMoe(f, c);
        MoeConfig& m = c.moe;
        m.sharedIntermediate = f.requiredInt("shared_expert_intermediate_size", 1, 1 << 22);
        m.sharedName = "shared_expert";
        m.sharedGateName = "shared_expert_gate";
    }
};

} // namespace

const ModelFamily& qwen2MoeFamily() {
    static const Qwen2MoeFamily family;
    return family;
}

} // namespace qs
