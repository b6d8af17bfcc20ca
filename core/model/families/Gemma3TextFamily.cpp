#include "io/JsonFields.h"
#include "model/families/GemmaFamilyBase.h"
#include "util/Error.h"

namespace qs {

namespace {

// Gemma 3 (text): GemmaFamilyBase plus (1 + w) q_norm / k_norm per head before RoPE and a RoPE
// per layer type: transformers 5 nests rope_parameters by layer type, older configs give the
// sliding layers' theta as rope_local_base_freq (default 1e4) beside rope_theta and
// rope_scaling (which apply to full-attention layers only). Soft-capping is normally null.
class Gemma3TextFamily : public GemmaFamilyBase {
public:
    std::string name() const override { return "gemma3_text"; }
    std::vector<std::string> modelTypes() const override { return {"gemma3_text"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = GemmaFamilyBase::knownKeys();
        k.insert(k.end(),
                 {"rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern"});
        return k;
    }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        GemmaFamilyBase::parseConfig(f, c);
        c.layout.qkNorm = true;
        if (!c.slidingRope) {
            if (f.has("rope_parameters") && f.has("rope_local_base_freq"))
                throw Error(f.source(), "rope_local_base_freq",
                            "given beside a rope_parameters without a sliding_attention entry; "
                            "which theta the sliding layers use is ambiguous");
            RopeParameters local;
            local.theta = f.optionalDouble("rope_local_base_freq", 10000.0, 1e-6, 1e15);
            c.slidingRope = local;
        }
    }

protected:
    // layer_types wins when present (transformers ignores the pattern then)
    int64_t defaultSlidingPattern(const JsonFields& f) const override {
        const char* key =
            f.has("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
        return f.optionalInt(key, 6, 1, 1 << 20);
    }
};

} // namespace

const ModelFamily& gemma3TextFamily() {
    static const Gemma3TextFamily family;
    return family;
}

} // namespace qs
