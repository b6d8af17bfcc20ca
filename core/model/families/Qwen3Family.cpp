#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Qwen3: the Qwen2 decoder without q/k/v biases (attention_bias, default false) and with a
// per-head RMSNorm on q and k (q_norm / k_norm, weight [head_dim]) after the projection and
// before RoPE; head_dim is its own key and need not be hidden / heads.
class Qwen3Family : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen3"; }
    std::vector<std::string> modelTypes() const override { return {"qwen3"}; }
    FamilyCapabilities capabilities() const override {
        return {/*rotation=*/true, /*onnx=*/true, /*gguf=*/nullptr};
    }
    std::vector<std::string> knownKeys() const override {
        return withQwenSlidingKeys(LlamaStyleFamily::knownKeys());
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.layout.qkNorm = true;
        parseQwenSlidingWindow(f, c);
    }
};

} // namespace

const ModelFamily& qwen3Family() {
    static const Qwen3Family family;
    return family;
}

} // namespace qs
