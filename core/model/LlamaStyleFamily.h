#pragma once

#include "model/ModelFamily.h"

namespace qs {

// Shared parsing and module tree of the pre-norm rotary decoders (Llama, Mistral, Qwen2). The
// family files override only what differs.
class LlamaStyleFamily : public ModelFamily {
public:
    void parseConfig(const JsonFields& fields, ModelConfig& config) const override;
    ModuleNode buildTree(const ModelConfig& config, const Checkpoint& checkpoint) const override;
    std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                         std::shared_ptr<const Checkpoint> checkpoint,
                                         const ComputeOptions& compute) const override;
};

// Helpers shared by all families' buildTree: a leaf for `tensor` checked against `expected`.
ModuleNode weightLeaf(const Checkpoint& checkpoint, const std::string& module,
                      const std::string& kind, const std::vector<int64_t>& expected, int blockIndex,
                      bool withBias = false);
// Sums children's parameters into each inner node.
int64_t sumParameters(ModuleNode& node);

} // namespace qs
