#pragma once

#include "quant/QuantScheme.h"

#include <nlohmann/json.hpp>

#include <optional>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// Error of a quantized tensor `a` against its reference `r`. sqnrDb is +inf when the error is
// exactly zero (written as null in JSON). meanRelative is Quark's debug-tool metric
// mean(|a - r| / (|r| + eps)).
struct ErrorMetrics {
    bool valid = false;
    double mse = 0.0;
    double sqnrDb = 0.0;
    double cosine = 0.0;
    double maxAbs = 0.0;
    double meanRelative = 0.0;
};

struct Histogram {
    double lo = 0.0;
    double hi = 0.0;
    std::vector<int64_t> counts; // equal-width bins over [lo, hi]
};

// Statistics of a linear's input activations per input channel, on the full-precision model.
struct ChannelStatistics {
    int64_t tokens = 0; // tokens observed
    std::vector<float> min, max, absmax;
    std::vector<float> percentile; // |x| percentile per channel (on a token subsample)
    double percentileLevel = 99.0;
    std::vector<float> kurtosis;    // excess kurtosis per channel
    std::vector<float> tokenAbsmax; // absmax over channels of the first sample's tokens
    Histogram histogram;            // all values (subsample)
    Histogram quantizedHistogram;   // after the layer's input quantizer, when it has one
};

// One logical part of a fused projection (Phi-3's qkv_proj: q, k, v; gate_up_proj: gate, up):
// its output rows and the errors restricted to them.
struct PartReport {
    std::string name;
    int64_t rowBegin = 0;
    int64_t rows = 0;
    ErrorMetrics weight;
    ErrorMetrics outputLocal;
};

// The ranges per input channel of a layer before and after a transform that moves them
// (SmoothQuant and AutoSmoothQuant divide activation channels by s and multiply the weight's
// columns by s; rotation spreads the channels over all of them), so a view can show the
// outliers flattened. "After" is after every transform of the recipe.
struct TransformRanges {
    std::string transform; // "SmoothQuant", "rotation": the first such transform of the layer
    std::vector<float> inputAbsmaxBefore;  // max |x| per channel of the inputs it was given
    std::vector<float> weightAbsmaxBefore; // max |w| per input column before it
    std::vector<float> weightAbsmaxAfter;  // the same of the full-precision weight after all
                                           // transforms; the inputs after are `input.absmax`
    bool valid() const { return !transform.empty(); }
};

// Everything the analysis knows about one linear layer.
struct LayerReport {
    std::string name;
    std::string kind;
    int block = -1;
    std::vector<int64_t> shape; // [out, in]
    std::string scheme;         // quantScheme->label(); empty when the weight is not quantized
    std::optional<quant::QuantScheme> quantScheme; // the scheme the layer was quantized with
    bool quantized = false;
    std::string note; // why it is not quantized (excluded, unfit shape), if so
    ErrorMetrics weight;
    ErrorMetrics outputLocal; // quantized layer on full-precision inputs vs fp layer
    // An algorithm chose what is rounded (GPTQ's codes, AWQ's scales and clips): the same two
    // errors with rounding to nearest of the layer as it was before the algorithm, on the same
    // inputs. Invalid for every other layer.
    ErrorMetrics weightRoundToNearest;
    ErrorMetrics outputLocalRoundToNearest;
    std::vector<std::string> transforms; // the plan's transforms, in order
    // A cheap estimate of how much of the model's KL divergence this layer causes, known right
    // after the analysis: its local output error energy per token relative to the energy per
    // token of its block's full-precision input (the residual stream it perturbs),
    //   out_features * outputLocal.mse / E_tokens |h_block|^2.
    // Its rank correlation with the measured KL of the layer alone is in docs/fidelity.md.
    double klProxy = 0.0;
    ErrorMetrics outputAccumulated; // quantized model's output here vs the fp model's
    ErrorMetrics inputQuantization; // the input quantizer's output vs its input (Quark "io")
    ErrorMetrics inputDrift;        // quantized model's input here vs the fp model's
    ChannelStatistics input;
    TransformRanges ranges; // analysis of a range-moving transform only
    Histogram weightHistogram;
    Histogram weightQuantizedHistogram;
    std::vector<PartReport> parts; // fused projections only
    double outlierScore = 0.0;     // max channel absmax / median channel absmax of the input
    double inputAbsmax = 0.0;
    double maxKurtosis = 0.0;
};

struct AnalysisReport {
    std::string model;
    nlohmann::json recipe;
    int64_t calibrationSamples = 0;
    int64_t seqLen = 0;
    double seconds = 0.0;
    std::vector<LayerReport> layers; // model order
    // Layers by descending outlier score.
    std::vector<std::pair<std::string, double>> outlierRanking() const;
    nlohmann::json toJson(bool withChannels = true) const;
};

nlohmann::json toJson(const ErrorMetrics& m);
nlohmann::json toJson(const Histogram& h);

} // namespace qs
