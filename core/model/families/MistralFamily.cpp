#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Mistral: the Llama decoder with an optional sliding attention window on every layer.
class MistralFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "mistral"; }
    std::vector<std::string> modelTypes() const override { return {"mistral"}; }
    FamilyCapabilities capabilities() const override {
        return {/*rotation=*/true, /*onnx=*/true, /*gguf=*/nullptr};
    }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        k.push_back("sliding_window");
        return k;
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
    }
};

} // namespace

const ModelFamily& mistralFamily() {
    static const MistralFamily family;
    return family;
}

} // namespace qs
