#include "analysis/ChannelStatsAccumulator.h"

#include "analysis/ErrorAccumulator.h"

#include "util/HostTensor.h"

#include <algorithm>
#include <cmath>

namespace qs {

namespace {

std::vector<float> toVector(const at::Tensor& t) {
    return hostVector<float>(t);
}

} // namespace

void ChannelStatsAccumulator::add(const at::Tensor& x) {
    const int64_t C = x.size(-1);
    // Statistics stay where the activations live; only finish() brings the results over.
    const at::Tensor rows = x.detach().reshape({-1, C});
    const at::Tensor d = rows.to(at::kDouble);
    if (!m_min.defined()) {
        m_min = rows.amin(0).to(at::kFloat);
        m_max = rows.amax(0).to(at::kFloat);
        m_s1 = at::zeros({C}, d.options());
        m_s2 = at::zeros({C}, d.options());
        m_s3 = at::zeros({C}, d.options());
        m_s4 = at::zeros({C}, d.options());
        // Per-token range of the first sample (a window of the calibration set).
        const at::Tensor first = x.dim() >= 3 ? x.select(0, 0) : x;
        m_firstTokenAbsmax = first.reshape({-1, C}).abs().amax(1).to(at::kFloat);
    } else {
        m_min = at::minimum(m_min, rows.amin(0).to(at::kFloat));
        m_max = at::maximum(m_max, rows.amax(0).to(at::kFloat));
    }
    const at::Tensor d2 = d * d;
    m_s1 += d.sum(0);
    m_s2 += d2.sum(0);
    m_s3 += (d2 * d).sum(0);
    m_s4 += (d2 * d2).sum(0);
    m_tokens += rows.size(0);
    if (m_sampled < kSampleTokens) {
        const int64_t take = std::min(kSampleTokens - m_sampled, rows.size(0));
        m_sample.push_back(rows.narrow(0, 0, take).to(at::kFloat).clone());
        m_sampled += take;
    }
}

void ChannelStatsAccumulator::addQuantized(const at::Tensor& xq) {
    if (m_quantizedSampled >= kSampleTokens)
        return;
    const at::Tensor rows = xq.detach().reshape({-1, xq.size(-1)});
    const int64_t take = std::min(kSampleTokens - m_quantizedSampled, rows.size(0));
    m_quantizedSample.push_back(rows.narrow(0, 0, take).to(at::kFloat).clone());
    m_quantizedSampled += take;
}

ChannelStatistics
ChannelStatsAccumulator::finish(double percentileLevel,
                                const ChannelStatsAccumulator* quantizedFrom) const {
    ChannelStatistics s;
    if (m_tokens == 0)
        return s;
    s.tokens = m_tokens;
    s.min = toVector(m_min);
    s.max = toVector(m_max);
    s.absmax = toVector(at::maximum(m_min.abs(), m_max.abs()));
    const double n = double(m_tokens);
    const at::Tensor mean = m_s1 / n;
    // Central moments from raw sums: m2 = E[x²] - μ², m4 = E[x⁴] - 4μE[x³] + 6μ²E[x²] - 3μ⁴.
    const at::Tensor e2 = m_s2 / n, e3 = m_s3 / n, e4 = m_s4 / n;
    const at::Tensor var = (e2 - mean * mean).clamp_min(0);
    const at::Tensor m4 = e4 - 4 * mean * e3 + 6 * mean * mean * e2 - 3 * mean.pow(4);
    const at::Tensor kurt = at::where(var > 1e-30, m4 / (var * var) - 3.0, at::zeros_like(var));
    s.kurtosis = toVector(kurt);
    s.percentileLevel = percentileLevel;
    const at::Tensor sample = at::cat(m_sample, 0);
    // Nearest-rank percentile per channel (at::quantile refuses inputs over 2^24 elements).
    const int64_t rows = sample.size(0);
    const int64_t k = std::max<int64_t>(
        1, std::min<int64_t>(rows, int64_t(std::ceil(percentileLevel / 100.0 * double(rows)))));
    s.percentile = toVector(std::get<0>(at::kthvalue(sample.abs(), k, 0)));
    s.histogram = histogramOf(sample, kHistogramBins);
    const std::vector<at::Tensor>& quantized =
        (quantizedFrom ? quantizedFrom : this)->m_quantizedSample;
    if (!quantized.empty())
        s.quantizedHistogram =
            histogramOf(at::cat(quantized, 0), kHistogramBins, s.histogram.lo, s.histogram.hi);
    s.tokenAbsmax = toVector(m_firstTokenAbsmax);
    return s;
}

} // namespace qs
