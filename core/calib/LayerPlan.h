#pragma once

#include "analysis/LayerReport.h"
#include "calib/ActivationQuantizer.h"
#include "quant/QuantScheme.h"
#include "quant/Quantize.h"
#include "quant/StoredQuantization.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// A linear's weight as quantization left it. `codes` keeps what an exporter writes (integer or
// bit codes with their scales and zero points); `dequantized` is what the quantized forward
// multiplies by. Nothing downstream re-derives codes from the dequantized floats.
struct WeightQuantization {
    at::Tensor reference;   // full precision, after the transforms
    at::Tensor dequantized; // == reference when the weight is not quantized
    // Absent for unquantized weights and for formats that exist only as fake quantization
    // (Quark's progressive int4->fp8 stage, MX6, BFP16).
    std::optional<quant::QuantizedTensor> codes;
    // Analysis only, for a layer an algorithm that chooses what is rounded changed (GPTQ's codes,
    // AWQ's scales and clips): what rounding to nearest gives on the layer as it was before that
    // algorithm, expressed on the layer's current inputs and outputs, so the analysis shows what
    // the algorithm bought layer by layer. Undefined otherwise.
    at::Tensor roundToNearest;
    // The same layer before the algorithm, unquantized, on the current inputs and outputs, when
    // it differs from `reference` (AWQ's clipping changed the reference): what the local errors
    // of such a layer are measured against. Undefined otherwise.
    at::Tensor beforeAlgorithm;
};

// Analysis only: a layer's weight as it was when the first code-choosing algorithm of its
// block started, and the per-channel scales moved onto the layer since (ScalingGroups'
// applyScales): its current weight is diag(1 / outputScale) W diag(inputScale), then clipped or
// re-chosen. Undefined scales are ones.
struct WeightBaseline {
    at::Tensor weight;
    at::Tensor inputScale;       // [in], multiplied into the columns
    at::Tensor outputScale;      // [out], divided out of the rows
    size_t transformsBefore = 0; // plan.transforms.size() when the weight was taken
};

// Which parts of a plan a run applies (sensitivity turns layers on and off without
// recalibrating): the quantized weight with the input quantizer, and the output quantizer.
struct PlanParts {
    bool weightAndInput = true;
    bool output = true;
};
struct LayerPlan;
using PlanFilter = std::function<PlanParts(const LayerPlan&)>;

// Everything known about the quantization of one linear layer: what every consumer reads (the
// passes of CalibrationPipeline, analysis, evaluation, the algorithms, the exporters, the GUI
// through `report`). Built by LayerPlanner, filled in by the passes in their order:
// transforms -> weight -> input/output quantizers observed and frozen -> report.
struct LayerPlan {
    std::string name; // "model.layers.0.mlp.down_proj"
    std::string kind; // "down_proj"
    int block = -1;
    std::vector<int64_t> shape; // [out, in]

    // Weight and input quantization; nullopt: both stay in full precision (excluded, or unfit
    // under the "skip" policy, with `note` saying which).
    std::optional<quant::QuantScheme> scheme;
    // Output quantization: the recipe's KV-cache spec for k/v projections, else the scheme's.
    std::optional<quant::QuantSpec> outputSpec;
    bool outputIsKvCache = false; // outputSpec is the recipe's KV-cache spec
    std::string note;
    // What the checkpoint already carries for this layer (a real-quantized export): the
    // weight is used as loaded, static quantizers take the stored parameters.
    std::optional<quant::StoredLayerQuantization> stored;

    std::vector<std::string> transforms; // names of the transforms applied, in order
    WeightQuantization weight;
    WeightBaseline baseline; // analysis of code-choosing algorithms only (see WeightBaseline)
    std::optional<ActivationQuantizer> input;
    std::optional<ActivationQuantizer> output;

    LayerReport report;

    bool quantized() const { return scheme.has_value() || outputSpec.has_value(); }
    bool needsObservation() const {
        return (input && input->needsObservation()) || (output && output->needsObservation());
    }
    // Fake-quantizes `weight` (kept as the reference) with the scheme's weight spec, keeping the
    // codes, scales and zero points. Without a weight spec the weight stays as it is.
    void quantizeWeight(const at::Tensor& weight);
    // Fills weight.roundToNearest (and weight.beforeAlgorithm when it differs from the
    // reference) from `baseline`, then releases the baseline. Nothing without a baseline: only
    // an analysed run takes one (pass::applyTransforms).
    void keepRoundToNearest();
    // Drops the full-precision and fake-quantized weights of a layer that has codes and stores
    // integer codes in the narrowest dtype that holds their range (int8 or uint8 instead of
    // int32), for runs that only export the codes (Exporter::readsOnlyCodes). False, changing
    // nothing, when the layer has no codes.
    bool releaseFloatWeights();
    // Creates the input/output quantizers of the scheme (after the weight, before observation).
    void createActivationQuantizers();

    at::Tensor quantizeInput(const at::Tensor& x) const { return input ? input->apply(x) : x; }
    at::Tensor quantizeOutput(const at::Tensor& y) const { return output ? output->apply(y) : y; }
    void freeze();
};

} // namespace qs
