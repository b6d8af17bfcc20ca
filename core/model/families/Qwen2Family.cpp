#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Qwen2: biases on q/k/v (never on o_proj). A sliding window applies only with
// use_sliding_window, on the layers layer_types marks sliding (transformers 5) or, in older
// configs, on layers from max_window_layers on.
class Qwen2Family : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen2"; }
    std::vector<std::string> modelTypes() const override { return {"qwen2"}; }
    FamilyCapabilities capabilities() const override {
        return {/*rotation=*/true, /*onnx=*/true, /*gguf=*/nullptr};
    }
    std::vector<std::string> knownKeys() const override {
        return withQwenSlidingKeys(LlamaStyleFamily::knownKeys());
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.attentionBias = true;
        c.outputBias = false;
        c.mlpBias = false;
        parseQwenSlidingWindow(f, c);
    }
};

} // namespace

std::vector<std::string> withQwenSlidingKeys(std::vector<std::string> keys) {
    keys.insert(keys.end(),
                {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types"});
    return keys;
}

// Shared with Qwen3 and Qwen3-MoE, which window the same way.
void parseQwenSlidingWindow(const JsonFields& f, ModelConfig& c) {
    parseLayerTypes(f, c);
    if (!f.optionalBool("use_sliding_window", false)) {
        c.slidingWindow = 0;
        return;
    }
    c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
    if (c.slidingLayer.empty() && c.slidingWindow > 0) {
        const int64_t from = f.optionalInt("max_window_layers", c.numLayers, 0, 1 << 20);
        for (int64_t i = 0; i < c.numLayers; ++i)
            c.slidingLayer.push_back(i >= from);
    }
}

const ModelFamily& qwen2Family() {
    static const Qwen2Family family;
    return family;
}

} // namespace qs
