#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Qwen2: biases on q/k/v (never on o_proj), sliding window only when use_sliding_window is set.
class Qwen2Family : public LlamaStyleFamily {
public:
    std::string name() const override { return "qwen2"; }
    std::vector<std::string> modelTypes() const override { return {"qwen2"}; }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        LlamaStyleFamily::parseConfig(f, c);
        c.attentionBias = true;
        c.outputBias = false;
        c.mlpBias = false;
        if (f.optionalBool("use_sliding_window", false))
            c.slidingWindow = f.optionalInt("sliding_window", 0, 0, int64_t(1) << 32);
    }
};

} // namespace

const ModelFamily& qwen2Family() {
    static const Qwen2Family family;
    return family;
}

} // namespace qs
