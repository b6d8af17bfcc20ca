#pragma once

#include "analysis/LayerReport.h"

#include <ATen/ATen.h>

namespace qs {

// Per-input-channel statistics of a linear's activations, streamed batch by batch: exact
// min/max/absmax and moments over every token; percentiles and histograms on the first
// kSampleTokens tokens (a bounded subsample keeps memory flat on long calibration sets).
class ChannelStatsAccumulator {
public:
    static constexpr int64_t kSampleTokens = 8192;
    static constexpr int64_t kHistogramBins = 128;

    // x: [..., C]; the last axis is the channel.
    void add(const at::Tensor& x);
    // The same tokens after the input quantizer (for the quantized histogram).
    void addQuantized(const at::Tensor& xq);
    // Everything but the quantized histogram, which belongs to each layer reading the inputs
    // (q, k and v read one tensor through three input quantizers): quantizedHistogram().
    ChannelStatistics finish(double percentileLevel = 99.0) const;
    // The histogram of this accumulator's quantized samples over the bins of `over` (the
    // unquantized histogram); empty when it has none.
    Histogram quantizedHistogram(const Histogram& over) const;

private:
    at::Tensor m_min, m_max, m_s1, m_s2, m_s3, m_s4; // [C], double moments
    int64_t m_tokens = 0;
    std::vector<at::Tensor> m_sample, m_quantizedSample;
    int64_t m_sampled = 0, m_quantizedSampled = 0;
    at::Tensor m_firstTokenAbsmax;
};

} // namespace qs
