// The passes of the calibration pipeline over one block (CalibrationPipeline.h gives the order).
// Each pass is a function of the block's state, testable alone; the batch loops report progress
// and check for cancellation between batches.
#pragma once

#include "calib/BlockQuantHook.h"
#include "calib/BlockTransform.h"
#include "calib/LayerAnalyzer.h"
#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qs {

struct CalibrationShards;

// fraction in [0, 1] and a message; returning false cancels (qs::Cancelled) within one batch.
using PipelineProgress = std::function<bool(double, const std::string&)>;

// Progress of a run over `blocks` blocks: a pass reports its position within the block.
class BlockProgress {
public:
    BlockProgress(PipelineProgress progress, int blocks)
        : m_progress(std::move(progress)), m_blocks(blocks) {}
    // Throws qs::Cancelled when the callback says stop.
    void report(int block, double within, const std::string& what) const;
    void reportOverall(double fraction, const std::string& what) const;

private:
    PipelineProgress m_progress;
    int m_blocks;
};

// What the hook captured for one calibration batch: each linear's input and output.
struct BatchCapture {
    std::map<std::string, at::Tensor> inputs, outputs;
};

// One block as the passes see it.
struct BlockRun {
    // `plans` are the block's, in the order of block.linears(); the hook is built on them
    // (with the same filter, if any).
    BlockRun(DecoderBlock& block, std::vector<LayerPlan>& plans, BlockQuantHook& hook,
             const BlockProgress& progress, int64_t maxBatchTokens, PlanFilter filter = {});

    int index = 0;
    DecoderBlock* block = nullptr;
    std::vector<LinearLayer*> linears; // the block's linears, in the plans' order
    std::vector<LayerPlan>* plans = nullptr;
    BlockQuantHook* hook = nullptr;
    const BlockProgress* progress = nullptr;
    int64_t maxBatchTokens = 2048;
    // When set, the quantized weights go only where it selects them (build the hook with the
    // same filter); the others keep their reference weights.
    PlanFilter filter;
    // The run analyses this block: the transform pass keeps what the analysis compares the
    // algorithms with (each changed layer's weight before a code-choosing algorithm, its ranges
    // before a range-moving one); nothing of it otherwise.
    bool analyse = false;
    // The run reads the block no further than its codes (no forward pass, an exporter that
    // reads only codes): quantizeWeights releases each layer's float weights once its codes
    // exist, so a block's full-precision weights and their fake-quantized copy never coexist.
    bool releaseFloatWeights = false;
    // Set when the calibration batches are spread over ranks: the streams hold this rank's
    // shards, and the transforms and observers combine theirs with the other ranks'.
    const CalibrationShards* shards = nullptr;
};

namespace pass {

// Puts the plans' reference (full-precision) or quantized weights into the block's linears
// (quantized ones only where run.filter selects them).
void setWeights(BlockRun& run, bool quantized);

// Runs the block over `stream` ([N, T, H]) batch by batch with the hook in `mode` and the
// reference or quantized weights; returns the block's outputs (the next block's inputs).
// Progress goes from `from` to `to` within the block.
at::Tensor forward(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx,
                   BlockQuantHook::Mode mode, bool quantizedWeights, double from, double to,
                   const std::string& what);

// 1. Capture: every linear's inputs over the calibration stream (reference weights), for the
//    transforms that need them.
std::map<std::string, std::vector<at::Tensor>>
captureInputs(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx);

// A calibration stream of a block (its inputs [N, T, H], undefined without calibration) and,
// when a transform needs them, its linears' inputs captured over it.
struct TransformInputs {
    at::Tensor stream;
    std::map<std::string, std::vector<at::Tensor>> captured;
    // The full-precision model's stream beside the quantized one (for the transforms whose
    // stream() is QuantizedAndReference); undefined when none asks for it.
    at::Tensor reference;
};

// 2. Transforms (algorithms), in order, on the full-precision block. Each sees the stream it
//    asks for (BlockTransform::stream): `observed` or `quantized` (the same object when the
//    calibration is sequential); `ctx` is passed on to the transforms that run the block
//    themselves. With run.analyse, each layer a transform changes keeps its weight from before
//    the first code-choosing one (LayerPlan::baseline) and its input and weight ranges from
//    before the first range-moving one (LayerReport::ranges).
void applyTransforms(BlockRun& run, const std::vector<std::shared_ptr<BlockTransform>>& transforms,
                     const TransformInputs& observed, const TransformInputs& quantized,
                     const ModelConfig& config, const ForwardContext& ctx,
                     const Checkpoint* checkpoint = nullptr);

// 3. Weight quantization: each plan quantizes its linear's current weight round-to-nearest
//    (codes, scales and zero points kept) unless a transform quantized it already, rounds its
//    baseline to nearest when it has one, and creates its activation quantizers; fills the
//    report header.
void quantizeWeights(BlockRun& run);

// 4. Observation: static quantizers see the block's activations over `stream`; with
//    `quantizedWeights` false (float calibration) the block runs in full precision. Returns the
//    block's outputs (unchanged by observation). With `captures`, each batch's linear inputs
//    and outputs are kept there (the analysis of a float-calibrated block reuses them instead
//    of running the full-precision block a second time).
at::Tensor observeActivations(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx,
                              bool quantizedWeights, std::vector<BatchCapture>* captures = nullptr);

// 5. Freeze: static quantizers take their parameters from what they observed (in a run spread
//    over ranks, from what every rank observed: mergeObservers).
void freeze(BlockRun& run);

// 6. Analysis: each batch runs through the quantized block (quantized stream) and, unless
//    `refCaptures` already holds its full-precision captures (from observation), through the
//    full-precision block (reference stream, output into `nextRef`); the analyzer compares them
//    layer by layer. The quantized stream's outputs go into `nextQuant`. `analyzers`: one for
//    every batch, or one per batch (a run spread over ranks: one per calibration shard, merged
//    in shard order by LayerAnalyzer::combineShards).
void analyse(BlockRun& run, const at::Tensor& refStream, const at::Tensor& quantStream,
             const ForwardContext& ctx, std::vector<LayerAnalyzer>& analyzers,
             const std::vector<BatchCapture>& refCaptures, at::Tensor& nextRef,
             at::Tensor& nextQuant);

} // namespace pass

} // namespace qs
