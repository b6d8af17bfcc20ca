#pragma once

#include "model/ModelFamily.h"

namespace qs {

// Shared parsing and module tree of the pre-norm rotary decoders (Llama, Mistral, Qwen2/3,
// Gemma 2/3, Phi-3, Mixtral, Qwen3-MoE). The family files set what differs (ModelConfig's
// DecoderLayout and MoeConfig) and add the keys they read.
class LlamaStyleFamily : public ModelFamily {
public:
    std::vector<std::string> knownKeys() const override;
    void parseConfig(const JsonFields& fields, ModelConfig& config) const override;
    ModuleNode buildTree(const ModelConfig& config, const Checkpoint& checkpoint) const override;
    std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                         std::shared_ptr<const Checkpoint> checkpoint,
                                         const ComputeOptions& compute) const override;
    // The Llama groups (ScalingTemplate.h): a pre-norm decoder with separate q/k/v, o, gate/up
    // and down projections. A decoder whose layout differs (the config's DecoderLayout and
    // MoeConfig, which the family files set) is refused naming what prevents it: Gemma's
    // (1 + w) and sandwich norms, fused projections (Phi-3), experts (Mixtral, Qwen3-MoE).
    ScalingTemplate scalingTemplate(const ModelConfig& config) const override;

protected:
    // transformers' default rms_norm_eps of the family, used when config.json has none
    virtual double defaultNormEps() const { return 1e-6; }
};

// Helpers shared by all families' buildTree: a leaf for `tensor` checked against `expected`.
ModuleNode weightLeaf(const Checkpoint& checkpoint, const std::string& module,
                      const std::string& kind, const std::vector<int64_t>& expected, int blockIndex,
                      bool withBias = false);
// A mixture-of-experts layer under block `i`'s module `p` (`p.<moe.prefix>`): its router, the
// experts node and, where the config has one, the shared expert and its gate.
ModuleNode moeNode(const ModelConfig& config, const Checkpoint& checkpoint, const std::string& p,
                   int i);
// The experts node of the MoE module `base`: one "expert" node per expert with its gate, up
// and down linears, whether the checkpoint stores them one tensor each or fused
// (MoeConfig::storage; the fused tensors' shapes are checked against the config).
ModuleNode expertsNode(const ModelConfig& config, const Checkpoint& checkpoint,
                       const std::string& base, int i);
// Whether `name` is one of the fused expert tensors the config's MoE layers store.
bool isFusedExpertTensor(const ModelConfig& config, const std::string& name);
// Sums children's parameters into each inner node.
int64_t sumParameters(ModuleNode& node);
// qs::Error naming a stored tensor the tree does not use (a bias the config does not announce,
// a tensor of another layout): the forward would silently leave it out. Tolerated: rotary
// inv_freq buffers old checkpoints store, GPT-J's causal-mask buffers (attn.bias,
// attn.masked_bias), and a stored lm_head of a tied model (transformers ties it to the
// embedding as well).
void checkEveryTensorUsed(const ModuleNode& tree, const ModelConfig& config,
                          const Checkpoint& checkpoint);
// Reads "layer_types" (transformers 5: one "full_attention" / "sliding_attention" per layer)
// into config.slidingLayer; qs::Error for a wrong length or an unknown type.
void parseLayerTypes(const JsonFields& fields, ModelConfig& config);
// Qwen2/3's windowing: only with use_sliding_window, on the layers layer_types marks sliding or
// (older configs) from max_window_layers on (families/Qwen2Family.cpp).
void parseQwenSlidingWindow(const JsonFields& fields, ModelConfig& config);
// The keys parseQwenSlidingWindow reads, appended to `keys`.
std::vector<std::string> withQwenSlidingKeys(std::vector<std::string> keys);
// The Qwen sparse MoE (Qwen3-MoE, Qwen1.5-MoE): mlp.gate router over num_experts,
// mlp.experts.{e}.gate_proj/up_proj/down_proj of moe_intermediate_size on layer i when i is not
// in mlp_only_layers and (i + 1) % decoder_sparse_step == 0, a dense MLP of intermediate_size
// elsewhere; the top-k probabilities renormalised only with norm_topk_prob
// (families/Qwen3MoeFamily.cpp).
void parseQwenMoe(const JsonFields& fields, ModelConfig& config);
// The keys parseQwenMoe reads, appended to `keys`.
std::vector<std::string> withQwenMoeKeys(std::vector<std::string> keys);

} // namespace qs
