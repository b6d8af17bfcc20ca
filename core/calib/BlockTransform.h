#pragma once

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qs {

struct AlgorithmSpec;
struct CalibrationShards;

// What a transform sees of one block: the block with its full-precision weights in place, the
// plans of its linears, and (when it asked for them) each linear's inputs over the calibration
// batches, captured by the capture pass.
struct BlockTransformInput {
    DecoderBlock& block;
    std::vector<LayerPlan>& plans;
    // layer name -> its inputs, one tensor per calibration batch ([rows, in_features] views of
    // what the linear consumed). Empty unless needsInputs().
    const std::map<std::string, std::vector<at::Tensor>>& inputs;
    // For transforms that run the block themselves (AWQ's and AutoSmoothQuant's searches): the
    // model's config (scaling template, attention heads), the block's calibration inputs
    // [N, T, H] (the stream the capture pass saw; undefined without calibration) with their
    // forward context, the batch size in tokens, and a progress report within the transform
    // (0..1) that throws qs::Cancelled when the run is cancelled.
    const ModelConfig* config = nullptr;
    at::Tensor stream;
    const ForwardContext* context = nullptr;
    int64_t maxBatchTokens = 2048;
    // For a transform whose stream() is QuantizedAndReference: the block's inputs [N, T, H] in
    // the full-precision model (batch for batch the same windows as `stream`); else undefined.
    at::Tensor referenceStream;
    std::function<void(double, const std::string&)> report;
    // The model's source checkpoint (what a model-level transform changed is read back from it).
    const Checkpoint* checkpoint = nullptr;
    // Set when the calibration batches are spread over ranks (calib/CalibrationShards.h): the
    // inputs and the stream are this rank's shards only, and a transform combines what it
    // gathers from them with the other ranks'. Only transforms that say combinesAcrossRanks()
    // see it set.
    const CalibrationShards* shards = nullptr;
};

// A transform pass of the calibration pipeline: runs on each block after its inputs were
// captured and before its weights are quantized (CalibrationPipeline.h). This is where
// SmoothQuant and AWQ rescale and GPTQ's Hessians are gathered; a transform records its name in
// each plan it changes (LayerPlan::transforms) and may replace the weights of the block's linears
// (the new weights become the plans' reference weights). A transform that chooses the integer
// codes itself (GPTQ) fills the plan's `weight` in (reference, dequantized, codes with scales
// and zero points); the weight pass then leaves that plan alone and round-to-nearest quantizes
// the others. Versioned with the recipe's
// "algorithms" list: every algorithm a recipe names must have a transform, or the run is refused.
class BlockTransform {
public:
    virtual ~BlockTransform() = default;
    virtual std::string name() const = 0;
    // Whether apply() needs the captured inputs (the capture pass runs only if one does).
    virtual bool needsInputs() const { return false; }
    // The calibration stream apply() sees (BlockTransformInput::stream and ::inputs).
    // Observed (the default): the one the recipe's static observers see (calibration mode: the
    // full-precision model upstream, or the quantized one). Quantized: the model quantized
    // upstream whatever the mode, as Quark's GPTQ takes its Hessians (each block's inputs are
    // the previous block's outputs after its weights were quantized); the pipeline then carries
    // that stream too.
    // QuantizedAndReference: the quantized one as above, and besides it the full-precision
    // model's (BlockTransformInput::referenceStream), as GPTAQ and Qronos compare the two.
    enum class Stream { Observed, Quantized, QuantizedAndReference };
    virtual Stream stream() const { return Stream::Observed; }
    // Whether the transform chooses what the weight pass rounds (GPTQ's codes, AWQ's scales and
    // clips): an analysed run then compares each layer it changed with rounding to nearest of
    // the layer before it (LayerPlan::keepRoundToNearest).
    virtual bool choosesCodes() const { return false; }
    // Non-empty for a transform that moves ranges between a layer's inputs and its weight
    // (SmoothQuant, rotation): the name an analysed run labels the ranges before it with
    // (LayerReport::ranges). An analysed run captures the block's inputs for such a transform
    // even when it does not need them itself.
    virtual std::string rangesLabel() const { return {}; }
    // The ranges of `layer` before this transform, from its captured inputs (one tensor per
    // calibration batch, as the block now computes them) and the block as it is now: max |x|
    // per input channel and max |w| per input column, float32 [in]. The default reads them off
    // the captured inputs and the current weight, which is what they are before a block-local
    // transform; a model-level one (rotation) maps them back.
    virtual void rangesBefore(const BlockTransformInput& input, const LinearLayer& layer,
                              const std::vector<at::Tensor>& captured, at::Tensor& inputAbsmax,
                              at::Tensor& weightAbsmax) const;
    // Whether apply() gives the same result when the calibration batches are spread over ranks
    // (BlockTransformInput::shards): it reads no calibration data, or combines what it reads
    // across ranks (GPTQ's Hessians). A run with a transform that does not calibrates on every
    // batch in every rank.
    virtual bool combinesAcrossRanks() const { return !needsInputs(); }
    // Called by prepareRun for every quantized linear before any block is read: throws
    // qs::Error naming the layer and the field when the transform cannot treat its scheme.
    virtual void checkLayer(const std::string& /*layer*/,
                            const quant::QuantScheme& /*scheme*/) const {}
    // Called by prepareRun once the model's config is known, before any block is read: throws
    // qs::Error when the transform cannot run on this model (no scaling template, ...).
    virtual void checkModel(const ModelConfig& /*config*/) const {}
    virtual void apply(BlockTransformInput& input) = 0;
    // A transform that changes the whole model rather than one block (rotation of the residual
    // stream) returns the weight transform the model loads through (DecoderModel::
    // setWeightTransform); prepareRun calls it once, before any block is read, and it throws
    // qs::Error when the model cannot take the transform. Null (the default): block-local.
    virtual std::shared_ptr<const WeightTransform> modelTransform(const ModelConfig& /*config*/) {
        return nullptr;
    }
};

} // namespace qs
