#pragma once

#include "analysis/LayerReport.h"
#include "calib/BlockTransform.h"
#include "calib/CalibrationPasses.h"
#include "calib/LayerPlan.h"
#include "calib/LayerPlanner.h"
#include "eval/Perplexity.h"
#include "model/DecoderModel.h"
#include "recipe/Recipe.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qs {

class ResumeState; // calib/ResumeState.h

// Tokens per forward batch on a device. The CPU's 2048 keeps one batch's activations in cache
// (docs/performance.md); a GPU needs larger matmuls to fill its cores and launches a kernel per
// operation per batch, so it takes 8192 (a 7B-shaped block's largest temporary at 8192 tokens:
// 8192 x 11008 bf16 = 180 MB; the LM head's fp32 logits 8192 x 32000 = 1 GB).
int64_t batchTokensFor(const at::Device& device);

struct PipelineOptions {
    CalibrationMode mode = CalibrationMode::Float; // what static observers see (Recipe.h)
    bool analyze = false; // per-layer report (a full-precision reference stream too)
    // Tokens per forward batch (bounds activation temporaries): batchTokensFor(device).
    int64_t maxBatchTokens = 2048;
    // An analysed run keeps the full-precision pass's captures (every linear's input and output
    // over the calibration set, for one block) when they fit here; otherwise it runs the
    // full-precision block a second time after freezing.
    int64_t maxCaptureBytes = int64_t(1) << 30;
    // Keep every block's plans (weights, codes, frozen quantizers) in the result, for runs that
    // reuse one calibration (sensitivity). Otherwise a block's tensors go with the block.
    bool keepPlans = false;
    // The recipe's algorithms, run as the transform pass of every block (BlockTransform.h).
    std::vector<std::shared_ptr<BlockTransform>> transforms;
    // Sees each batch of the evaluation windows' logits as they are scored (eval/Perplexity.h).
    LogitsObserver onEvalLogits;
    // Called after each block with its layers' reports, so views can fill in as blocks finish.
    std::function<void(int block, const std::vector<LayerReport>& layers)> onBlockReports;
    // The sink reads quantized linears only through their codes (Exporter::readsOnlyCodes):
    // a run with no forward pass (no calibration, evaluation or analysis) and no kept plans
    // then releases each linear's float weights as soon as its codes exist.
    bool sinkReadsOnlyCodes = false;
    // Set when the calibration windows given to run() are this rank's shards of a run spread
    // over ranks (calib/CalibrationShards.h); it must outlive run().
    const CalibrationShards* shards = nullptr;
    // Set when a killed run may continue (--resume): its finished blocks are restored from
    // here instead of computed (their exports replayed, the streams taken as saved), and every
    // block this run finishes is saved to it before the next starts. It must outlive run().
    ResumeState* resume = nullptr;
    // With `resume` in a distributed run: called after each block's state is saved, with no
    // rank past it until every rank has saved it (a collective), so the older streams can go.
    std::function<void()> afterSave;
};

struct PipelineResult {
    std::vector<LayerReport> layers;           // every block linear, in model order
    std::vector<std::vector<LayerPlan>> plans; // per block, every linear's plan (keepPlans only)
    std::vector<std::string> skipped;          // left unquantized by the unfit policy, with reason
    double evalNllSum = 0.0;                   // over the evaluation windows, if any were given
    std::vector<double> evalBatchNll;          // its addends: each scored batch's sum, in order
    int64_t evalPredicted = 0;
    at::Tensor evalHidden; // the last block's outputs of the evaluation windows [W, L', H]
    std::vector<double> blockSeconds; // calibration + quantization time per block
};

// Called once per block after its passes, with the block in its final state (quantized
// weights in place) and its plans (codes, scales, zero points, frozen activation quantizers):
// what exporters stream out block by block.
using BlockSink =
    std::function<void(int blockIndex, DecoderBlock& block, const std::vector<LayerPlan>& plans)>;

// Sequential, block-by-block calibration and quantization (docs/architecture.md). For each
// block, in this order:
//
//   load -> plan (LayerPlanner) -> capture inputs (only if a transform needs them) ->
//   transforms (algorithms) -> weight quantization (codes kept) -> activation observation ->
//   freeze -> apply / analyse / evaluate (the streams advance to the next block) -> sink
//
// Three streams of hidden states may run through the blocks: the reference (full-precision)
// calibration stream (float calibration, analysis), the quantized calibration stream
// (sequential calibration, analysis) and the evaluation windows (quantized). Only the ones the
// run needs are computed. Peak memory: one block plus those streams.
class CalibrationPipeline {
public:
    CalibrationPipeline(DecoderModel& model, LayerPlanner& planner, PipelineOptions options);

    // calibration: int64 [N, L] ids (N may be 0); evaluation: int64 [W, L'] ids or undefined.
    PipelineResult run(const at::Tensor& calibration, const at::Tensor& evaluation,
                       const PipelineProgress& progress = {}, const BlockSink& sink = {});

    // Evaluation with quantization given by `plans` (from a keepPlans run), no calibration:
    // each plan applies the parts `filter` selects (quantized weight and input quantizer,
    // output quantizer), the others run in full precision. `stream` holds the inputs of block
    // `fromBlock` for the evaluation windows (embedWindows() for block 0); returns the last
    // block's outputs. `blockInputs`, when given, receives the input of every block run
    // (index = block), so a later evaluation that differs from block b on can start there.
    at::Tensor forwardWithPlans(std::vector<std::vector<LayerPlan>>& plans,
                                const PlanFilter& filter, at::Tensor stream, int fromBlock,
                                int64_t seqLen, std::vector<at::Tensor>* blockInputs = nullptr,
                                const PipelineProgress& progress = {});
    // Block 0's inputs for windows `ids` [W, L].
    at::Tensor embedWindows(const at::Tensor& ids);
    // The protocol's NLL sum of the last block's outputs `hidden` for windows `ids`;
    // `onLogits` sees each batch's logits.
    double scoreWindows(const at::Tensor& hidden, const at::Tensor& ids,
                        const LogitsObserver& onLogits = {});

private:
    DecoderModel& m_model;
    LayerPlanner& m_planner;
    PipelineOptions m_options;
};

} // namespace qs
