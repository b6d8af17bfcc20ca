#pragma once

#include "model/LlamaStyleFamily.h"

namespace qs {

// What Gemma 2 and Gemma 3 share: embeddings times sqrt(hidden_size), (1 + w) RMSNorms, four
// norms per layer, a GeGLU MLP (hidden_activation), attention scaled by
// query_pre_attn_scalar^-0.5, sliding layers from layer_types (or, in older configs, every
// `pattern`-th layer full), optional tanh soft-capping, tied embeddings by default.
class GemmaFamilyBase : public LlamaStyleFamily {
public:
    std::vector<std::string> knownKeys() const override;
    void parseConfig(const JsonFields& fields, ModelConfig& config) const override;

protected:
    // Older configs without layer_types: layer i slides unless (i + 1) % pattern == 0.
    virtual int64_t defaultSlidingPattern(const JsonFields& fields) const = 0;
};

} // namespace qs
