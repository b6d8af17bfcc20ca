#pragma once

#include "calib/CalibrationPipeline.h"
#include "eval/FidelityComparison.h"
#include "run/PreparedRun.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace qs {

// The row a layer is measured in: its own name, except the experts of a mixture-of-experts
// layer, whose linears of one kind share a row named by the pattern that addresses them
// ("model.layers.3.mlp.experts.*.down_proj"): 128 experts x 3 linears x 2 evaluations per layer
// would be out of reach, and one expert alone barely moves the perplexity.
std::string expertRowName(const std::string& layer);

// Only `layers` quantized: their weight and input quantizers, and their output quantizer unless
// that is the KV cache (which belongs to no one layer); every other plan off. The sensitivity
// study's "alone" rows and the recipe search's unit costs and anchors measure this.
PlanFilter onlyLayersQuantized(std::set<std::string> layers);

// The pipeline options of a calibration whose plans are kept to be evaluated again with layers
// switched on and off: the recipe's calibration mode and algorithms, the device's batch size.
PipelineOptions planKeepingOptions(const PreparedRun& prep);

// Evaluations of kept plans with layers switched on and off (PlanFilter), each against the
// full-precision model on the same windows: what the sensitivity study's rows and the recipe
// search's per-layer costs measure. The full-precision pass runs once (measureReference) and
// keeps every block's input, so a measurement that differs from it only from block b on starts
// there; its logits are kept once computed when they fit kCachedLogitBytes (each measurement
// then runs the LM head once, for its own logits, which score its perplexity and meet the
// reference's), else recomputed from its last-block outputs per measurement.
class PlanRowEvaluator {
public:
    static constexpr int64_t kCachedLogitBytes = int64_t(512) << 20;

    struct Measured {
        double perplexity = 0.0;
        FidelitySummary fidelity; // zero for the reference itself
    };

    // `evaluation`: int64 [W, L] ids; `model` computes the reference's logits (its final norm
    // and head).
    PlanRowEvaluator(DecoderModel& model, at::Tensor evaluation, int64_t maxBatchTokens);

    // The full-precision pass through `pipeline` with `plans` all switched off. Plans of any
    // calibration of this model serve: switched off, a plan runs its reference weight, which a
    // block-local transform (SmoothQuant, AWQ) changed only within rounding (a model-level one,
    // rotation, changes what the blocks compute: callers that mix calibrations refuse it).
    Measured measureReference(CalibrationPipeline& pipeline,
                              std::vector<std::vector<LayerPlan>>& plans,
                              const PipelineProgress& progress = {});

    // `plans` with the parts `filter` selects, starting at block `fromBlock` from `start` (its
    // input: referenceInput(b) when the measurement equals the reference before b, embedded()
    // for block 0); `blockInputs`, when given, receives each block's input.
    Measured measure(CalibrationPipeline& pipeline, std::vector<std::vector<LayerPlan>>& plans,
                     const PlanFilter& filter, const at::Tensor& start, int fromBlock,
                     std::vector<at::Tensor>* blockInputs = nullptr,
                     const PipelineProgress& progress = {});

    // Each of `layers` (of block `block`): its local output error energy on the reference
    // stream, the sum over tokens and outputs of (y_q - y)^2, y its full-precision output and
    // y_q its plan's quantizers and quantized weight on the same full-precision input (what
    // Analyze's local error measures, there on the calibration windows). One pass of the
    // block over referenceInput(block); measureReference must have run.
    std::map<std::string, double> localErrorEnergy(std::vector<std::vector<LayerPlan>>& plans,
                                                   int block, const std::set<std::string>& layers);

    const at::Tensor& embedded() const { return m_embedded; }
    const at::Tensor& referenceInput(int block) const {
        return m_referenceInputs.at(size_t(block));
    }
    int64_t predictedTokens() const { return m_predicted; }

private:
    DecoderModel& m_model;
    at::Tensor m_evaluation;
    int64_t m_maxBatchTokens;
    int64_t m_seqLen;
    int64_t m_predicted;
    at::Tensor m_embedded;
    std::vector<at::Tensor> m_referenceInputs;
    at::Tensor m_referenceLast, m_referenceLogits;
    BaseLogitRows m_reference;
};

} // namespace qs
