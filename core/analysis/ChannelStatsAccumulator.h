#pragma once

#include "analysis/LayerReport.h"

#include <ATen/ATen.h>

#include <vector>

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

    // A distributed analysis (one accumulator per calibration shard, merged in shard order):
    // the accumulator of a shard that starts `tokensBefore` tokens into the calibration keeps
    // only the samples the first kSampleTokens can still use.
    void skipSamples(int64_t tokensBefore);
    // Everything it holds as doubles (floats and counts convert exactly), and back onto
    // `device`; fromState advances `p` past what it read.
    void appendState(std::vector<double>& out) const;
    static ChannelStatsAccumulator fromState(const double*& p, const at::Device& device);
    // Takes in what `later` took after what this one took (the next calibration batches):
    // min and max element-wise, the moments added as add() adds a batch's, the samples appended
    // up to kSampleTokens, the first token's range kept. Merged in batch order, the result is
    // what one accumulator fed every batch holds, bit for bit.
    void merge(const ChannelStatsAccumulator& later);

private:
    at::Tensor m_min, m_max, m_s1, m_s2, m_s3, m_s4; // [C], double moments
    int64_t m_tokens = 0;
    std::vector<at::Tensor> m_sample, m_quantizedSample;
    int64_t m_sampled = 0, m_quantizedSampled = 0;
    int64_t m_sampleLimit = kSampleTokens; // tokens this one samples (skipSamples)
    at::Tensor m_firstTokenAbsmax;
};

} // namespace qs
