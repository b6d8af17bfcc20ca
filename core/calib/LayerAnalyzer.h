#pragma once

#include "analysis/ChannelStatsAccumulator.h"
#include "analysis/ErrorAccumulator.h"
#include "calib/CalibrationShards.h"
#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <map>
#include <string>
#include <vector>

namespace qs {

// The analysis pass of one block: per linear, the error of its quantized weight, of its output
// on full-precision inputs (local) and in the quantized model (accumulated), of its input
// quantizer, and its input statistics per channel. Fed one calibration batch at a time with what
// the hook captured on the reference (full-precision) and the quantized stream.
class LayerAnalyzer {
public:
    // `tokensBefore`: where its batches start in the calibration, in tokens (a distributed
    // analysis feeds one analyzer per calibration shard; it samples only what the first
    // ChannelStatsAccumulator::kSampleTokens tokens can still use).
    explicit LayerAnalyzer(const std::vector<LayerPlan>& plans, int64_t tokensBefore = 0);

    // A distributed analysis: the analyzers of this rank's calibration shards (`mine`, one per
    // shard of shards.mine, in order) and the other ranks' merged in shard order, on every rank:
    // the analyzer one process feeds every batch, bit for bit (every sum is a batch's partial
    // added in batch order, 0 + x being x; minima, maxima and samples are exact). Statistics
    // land on `device`.
    static LayerAnalyzer combineShards(const CalibrationShards& shards,
                                       const std::vector<LayerAnalyzer>& mine,
                                       const at::Device& device);

    // `ref*`: each linear's input and output on the reference stream; `quant*`: on the quantized
    // stream (inputs before the input quantizer, outputs after the output quantizer).
    void addBatch(const std::vector<LayerPlan>& plans, const std::vector<LinearLayer*>& linears,
                  const std::map<std::string, at::Tensor>& refInputs,
                  const std::map<std::string, at::Tensor>& refOutputs,
                  const std::map<std::string, at::Tensor>& quantInputs,
                  const std::map<std::string, at::Tensor>& quantOutputs);

    // The block's full-precision input (the residual stream) of one calibration batch [n, T, H]:
    // its energy per token scales the layers' KL proxy (LayerReport::klProxy).
    void addBlockInput(const at::Tensor& refInput);

    // Writes the metrics into each plan's report (weights must still be in the plans).
    void finish(std::vector<LayerPlan>& plans) const;

private:
    LayerAnalyzer() = default;
    void appendState(std::vector<double>& out) const;
    void mergeState(const double*& p, const at::Device& device);

    double m_residualSquares = 0.0; // sum over tokens of |h|^2
    int64_t m_residualTokens = 0;
    struct Layer {
        ErrorAccumulator local, localRoundToNearest, accumulated, inputQuant, drift;
        ChannelStatsAccumulator channels;
        std::vector<std::pair<std::string, int64_t>> parts; // fused projections (LinearLayer)
        std::vector<ErrorAccumulator> partsLocal;
        // The layer whose accumulators took this layer's full-precision inputs (the same tensor:
        // q, k and v, gate and up read one), so its input statistics and drift are not computed
        // again; empty when it took them itself.
        std::string inputsOf;
    };
    std::map<std::string, Layer> m_layers;
};

} // namespace qs
