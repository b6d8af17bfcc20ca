#pragma once

#include "analysis/LayerReport.h"
#include "model/DecoderModel.h"
#include "model/ModuleNode.h"
#include "quant/QuantScheme.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qs {

struct PipelineOptions {
    // Scheme of a linear (full name, kind such as "q_proj"); nullopt leaves it unquantized.
    std::function<std::optional<quant::QuantScheme>(const std::string&, const std::string&)>
        schemeFor;
    // Output (KV-cache) spec of a linear, if any.
    std::function<std::optional<quant::QuantSpec>(const std::string&, const std::string&)>
        outputSpecFor;
    // "error": a layer whose shape does not fit its scheme stops the run, naming it;
    // "skip": such layers stay unquantized and are reported.
    std::string unfitPolicy = "error";
    bool analyze = false;          // per-layer report (a full-precision reference stream too)
    int64_t maxBatchTokens = 2048; // tokens per forward batch (bounds activation temporaries)
    // Called after each block with its layers' reports, so views can fill in as blocks finish.
    std::function<void(int block, const std::vector<LayerReport>& layers)> onBlockReports;
};

struct PipelineResult {
    std::vector<LayerReport> layers;  // every block linear, in model order
    std::vector<std::string> skipped; // left unquantized by the unfit policy, with reason
    double evalNllSum = 0.0;          // over the evaluation windows, if any were given
    int64_t evalPredicted = 0;
    std::vector<double> blockSeconds; // calibration + quantization time per block
};

// Called once per block after its weights were quantized, with the block in its final state
// (quantized weights in place): lets `quantize` stream the checkpoint out block by block.
using BlockSink = std::function<void(int blockIndex, DecoderBlock& block)>;
// fraction in [0, 1] and a message; returning false cancels (qs::Cancelled) within one batch.
using PipelineProgress = std::function<bool(double, const std::string&)>;

// Sequential, block-by-block calibration and quantization (docs/architecture.md): capture the
// block's inputs over the calibration set, observe, quantize the block, compute its quantized
// outputs as the next block's inputs, release the block. Peak memory: one block plus the
// activations of the calibration (and evaluation) samples.
class CalibrationPipeline {
public:
    CalibrationPipeline(DecoderModel& model, PipelineOptions options);

    // Checks every block linear of `tree` against its scheme before any weight is read. Under the
    // "error" policy throws qs::Error naming every unfit layer; under "skip" remembers them.
    void checkShapes(const ModuleNode& tree);

    // calibration: int64 [N, L] ids; evaluation: int64 [W, L'] ids or undefined.
    PipelineResult run(const at::Tensor& calibration, const at::Tensor& evaluation,
                       const PipelineProgress& progress = {}, const BlockSink& sink = {});

    // Why a weight of shape [out, in] cannot take `scheme` (empty when it can).
    static std::string unfitReason(const quant::QuantScheme& scheme, int64_t inFeatures);

private:
    DecoderModel& m_model;
    PipelineOptions m_options;
    std::map<std::string, std::string> m_unfit; // layer → reason (skip policy)
};

} // namespace qs
