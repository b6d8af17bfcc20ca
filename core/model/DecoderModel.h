#pragma once

#include "io/Checkpoint.h"
#include "model/Compute.h"
#include "model/ModelConfig.h"

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qs {

// A linear layer of a decoder block: the unit that quantization replaces and analysis measures.
struct LinearLayer {
    std::string name;  // full name without ".weight", e.g. "model.layers.0.mlp.down_proj"
    std::string kind;  // short kind, e.g. "q_proj", "down_proj", "fc1"
    at::Tensor weight; // [out, in] in compute dtype on the compute device
    at::Tensor bias;   // undefined when the layer has none
    // A mixture-of-experts expert's linear: it sees only the tokens the router sends it, so its
    // inputs in two differently quantized streams are different token sets (or none at all).
    bool routed = false;
    // A fused projection's logical parts, (name, output rows) in row order: Phi-3's qkv_proj is
    // q, k, v and its gate_up_proj gate, up. Analysed part by part, quantized as stored.
    std::vector<std::pair<std::string, int64_t>> parts;
    // The module whose stored tensors hold this linear with others (experts stored fused:
    // "model.layers.0.mlp.experts", FusedExperts.h); empty when it has `<name>.weight` of its
    // own. Its tensors come back through DecoderBlock::fusedTensors().
    std::string storedIn;
    // Applied to the input before the hook and the matmul when set: an online rotation whose
    // inverse is fused into `weight` (rotation's R4 on down_proj), so activation quantizers see
    // the rotated input.
    std::function<at::Tensor(const at::Tensor&)> onlineInput;
};

// A norm of a decoder block with its learned parameters, addressable so that a transform can
// fold a per-channel scale into them (SmoothQuant, AWQ: ScalingTemplate.h).
struct BlockNorm {
    std::string name;             // full module name, e.g. "model.layers.0.input_layernorm"
    at::Tensor* weight = nullptr; // [hidden] in compute dtype
    at::Tensor* bias = nullptr;   // LayerNorm's bias; null for RMSNorm or when absent
};

// Observes and may replace a linear's input and output: activation capture, activation and
// output (KV-cache) fake quantization, per-layer error measurement.
class LinearHook {
public:
    virtual ~LinearHook() = default;
    virtual at::Tensor onInput(const LinearLayer& layer, const at::Tensor& input) { return input; }
    // `input` is what the linear actually consumed (after onInput).
    virtual at::Tensor onOutput(const LinearLayer& layer, const at::Tensor& input,
                                const at::Tensor& output) {
        return output;
    }
};

// Per-forward state shared by all blocks: rotary tables, attention mask, the optional hook.
// Families with sliding-window layers (Mistral, Gemma 2/3) also get the windowed mask, and the
// rotary tables of sliding layers where their RoPE differs (Gemma 3).
struct ForwardContext {
    at::Tensor cos; // [T, rotaryDim] (rotary families)
    at::Tensor sin;
    at::Tensor mask;        // [T, T] additive, 0 / -inf, compute dtype: causal
    at::Tensor slidingMask; // causal within the window; undefined when no layer slides
    at::Tensor slidingCos;  // undefined when sliding layers use cos/sin
    at::Tensor slidingSin;
    LinearHook* hook = nullptr;
};

// `layer` applied to x through ctx's hook (when there is one).
at::Tensor runLinear(LinearLayer& layer, const at::Tensor& x, const ForwardContext& ctx);

class DecoderBlock {
public:
    virtual ~DecoderBlock() = default;
    int index() const { return m_index; }
    // hidden: [B, T, H] in compute dtype; returns the block's output hidden states.
    virtual at::Tensor forward(const at::Tensor& hidden, const ForwardContext& ctx) = 0;
    // The block's quantizable linears (mixture-of-experts routers are not among them: they stay
    // in full precision, as Quark excludes them).
    virtual std::vector<LinearLayer*> linears() = 0;
    // The block's norms (empty where a family exposes none).
    virtual std::vector<BlockNorm> norms() { return {}; }
    // Mixture-of-experts blocks: the tokens routed to each expert by the forwards since load or
    // the last reset, keyed by the expert's module name ("model.layers.3.mlp.experts.7").
    // Empty for dense blocks.
    virtual std::vector<std::pair<std::string, int64_t>> routedTokens() const { return {}; }
    virtual void resetRoutedTokens() {}
    // The stored tensors that hold several linears at once (experts stored fused), rebuilt from
    // the linears as they are now: full tensor name -> tensor. Empty where every linear has a
    // tensor of its own.
    virtual std::map<std::string, at::Tensor> fusedTensors() const { return {}; }

protected:
    explicit DecoderBlock(int index) : m_index(index) {}
    static at::Tensor applyLinear(LinearLayer& layer, const at::Tensor& x,
                                  const ForwardContext& ctx);

private:
    int m_index;
};

// Rewrites weights as the model loads them: a model-level transform such as the residual-stream
// rotation (algo/ResidualRotation.h), which changes the embedding, every block and the head, so it
// is applied as each of them streams in and memory stays block-sized.
class WeightTransform {
public:
    virtual ~WeightTransform() = default;
    // The weight `name` (a checkpoint tensor name; "lm_head.weight" also for a tied head) as the
    // transformed model has it, in compute.dtype on compute.device.
    virtual at::Tensor load(const std::string& name, const Checkpoint& checkpoint,
                            const ComputeOptions& compute) const = 0;
    // Called on every block the model loads, after its weights: sets online parts
    // (LinearLayer::onlineInput).
    virtual void prepareBlock(DecoderBlock& /*block*/) const {}
    // Why the transformed model cannot be written as weights alone (an online part that runs
    // at inference, which no export format holds); empty when it can.
    virtual std::string notExportable() const { return {}; }
};

// A decoder-only language model whose blocks are loaded, run and released one at a time: the
// base of streaming calibration. Embedding and head weights are loaded on first use.
class DecoderModel {
public:
    DecoderModel(ModelConfig config, std::shared_ptr<const Checkpoint> checkpoint,
                 ComputeOptions compute);
    virtual ~DecoderModel() = default;

    const ModelConfig& config() const { return m_config; }
    const ComputeOptions& compute() const { return m_compute; }
    const Checkpoint& checkpoint() const { return *m_checkpoint; }
    int numBlocks() const { return int(m_config.numLayers); }

    // Rotary tables and causal mask for sequences of length T.
    virtual ForwardContext makeContext(int64_t seqLen) const;
    // ids: [B, T] int64 on any device → hidden [B, T, H].
    virtual at::Tensor embed(const at::Tensor& ids) = 0;
    virtual std::unique_ptr<DecoderBlock> loadBlock(int index) = 0;
    // Final norm + LM head; returns float32 logits [B, T, V].
    virtual at::Tensor logits(const at::Tensor& hidden) = 0;

    // Weights load through `transform` from now on (set it before the first embed()/loadBlock();
    // null: the checkpoint's weights). A tied LM head is then loaded as "lm_head.weight" on its
    // own, since a transform may make it differ from the embedding.
    void setWeightTransform(std::shared_ptr<const WeightTransform> transform);
    bool hasWeightTransform() const { return m_weightTransform != nullptr; }

    // Weight of `name` from the checkpoint in compute dtype on the compute device (through the
    // weight transform when one is set).
    at::Tensor loadWeight(const std::string& name) const;
    at::Tensor loadOptional(const std::string& name) const; // undefined when absent

protected:
    // What loadBlock() returns: `block` as the weight transform prepares it.
    std::unique_ptr<DecoderBlock> finishBlock(std::unique_ptr<DecoderBlock> block) const;

    ModelConfig m_config;
    std::shared_ptr<const Checkpoint> m_checkpoint;
    ComputeOptions m_compute;
    std::shared_ptr<const WeightTransform> m_weightTransform;
};

// Loads a tensor's bytes from a checkpoint into a new tensor of `dtype` on `device`.
at::Tensor loadTensor(const Checkpoint& checkpoint, const std::string& name, at::ScalarType dtype,
                      at::Device device);

// As loadTensor, except that a CPU tensor the file already stores in `dtype` is not copied: it
// is a view of the file's read-only mapping, which keeps `checkpoint` alive and hands the pages
// back when the last reference goes (a 100M model's eval spent a twentieth of its time copying
// its weights out; docs/performance.md). Such a tensor must never be written in place: the
// mapping is read-only, a write is a segmentation fault. Every transform here makes new tensors.
at::Tensor loadTensorShared(const std::shared_ptr<const Checkpoint>& checkpoint,
                            const std::string& name, at::ScalarType dtype, at::Device device);

} // namespace qs
