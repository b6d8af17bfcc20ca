#include "analysis/ChannelStatsAccumulator.h"

#include "analysis/ErrorAccumulator.h"

#include "util/HostTensor.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace qs {

namespace {

std::vector<float> toVector(const at::Tensor& t) {
    return hostVector<float>(t);
}

// CPU float32 fast path of add(): one pass over the rows for all six per-channel statistics,
// where the ATen expression makes a double copy of the batch and three double temporaries
// (about 32 bytes a value written and read again; a third of an analysis' time went there).
// Each thread owns a range of channels and sums its rows in row order, so the sums are the
// same whatever the thread count.
void addRowsOnCpu(const at::Tensor& rows, at::Tensor& mn, at::Tensor& mx, at::Tensor& s1,
                  at::Tensor& s2, at::Tensor& s3, at::Tensor& s4) {
    const at::Tensor r = rows.contiguous();
    const float* x = r.data_ptr<float>();
    const int64_t n = r.size(0), C = r.size(1);
    float* pMin = mn.data_ptr<float>();
    float* pMax = mx.data_ptr<float>();
    double* p1 = s1.data_ptr<double>();
    double* p2 = s2.data_ptr<double>();
    double* p3 = s3.data_ptr<double>();
    double* p4 = s4.data_ptr<double>();
    constexpr int64_t kChannels = 64; // one block's sums (2.5 KB) stay in L1 over the rows
    const int64_t blocks = (C + kChannels - 1) / kChannels;
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t blk = begin; blk < end; ++blk) {
            const int64_t c0 = blk * kChannels, w = std::min(kChannels, C - c0);
            double a1[kChannels], a2[kChannels], a3[kChannels], a4[kChannels];
            float lo[kChannels], hi[kChannels];
            for (int64_t j = 0; j < w; ++j) {
                a1[j] = a2[j] = a3[j] = a4[j] = 0.0;
                lo[j] = pMin[c0 + j];
                hi[j] = pMax[c0 + j];
            }
            for (int64_t i = 0; i < n; ++i) {
                const float* row = x + i * C + c0;
                for (int64_t j = 0; j < w; ++j) {
                    const float v = row[j];
                    // NaN propagates, as amin/amax propagate it.
                    lo[j] = (v < lo[j] || std::isnan(v)) && !std::isnan(lo[j]) ? v : lo[j];
                    hi[j] = (v > hi[j] || std::isnan(v)) && !std::isnan(hi[j]) ? v : hi[j];
                    const double d = v, d2 = d * d;
                    a1[j] += d;
                    a2[j] += d2;
                    a3[j] += d2 * d;
                    a4[j] += d2 * d2;
                }
            }
            for (int64_t j = 0; j < w; ++j) {
                pMin[c0 + j] = lo[j];
                pMax[c0 + j] = hi[j];
                p1[c0 + j] += a1[j];
                p2[c0 + j] += a2[j];
                p3[c0 + j] += a3[j];
                p4[c0 + j] += a4[j];
            }
        }
    });
}

// |x| per channel at nearest rank k of the sample's rows, on the host: the (rows - k + 1)-th
// largest, kept in a min-heap per channel while the rows stream by (most values fail the first
// comparison), channels split over threads. |x| is compared by its bit pattern with the sign
// cleared, which orders non-negative floats by value and puts NaN above +inf as kthvalue's
// order does, so the value returned is the element kthvalue returns.
std::vector<float> absPercentileOnCpu(const at::Tensor& sample, int64_t k) {
    const at::Tensor r = sample.contiguous();
    const float* x = r.data_ptr<float>();
    const int64_t rows = r.size(0), C = r.size(1), m = rows - k + 1;
    auto key = [](float v) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return bits & 0x7fffffffu;
    };
    std::vector<float> out(static_cast<size_t>(C), 0.0f);
    constexpr int64_t kChannels = 64;
    const int64_t blocks = (C + kChannels - 1) / kChannels;
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
        std::vector<uint32_t> heaps;
        const std::greater<uint32_t> above;
        for (int64_t blk = begin; blk < end; ++blk) {
            const int64_t c0 = blk * kChannels, w = std::min(kChannels, C - c0);
            heaps.resize(size_t(w * m));
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < w; ++j)
                    heaps[size_t(j * m + i)] = key(x[i * C + c0 + j]);
            for (int64_t j = 0; j < w; ++j)
                std::make_heap(heaps.begin() + j * m, heaps.begin() + (j + 1) * m, above);
            for (int64_t i = m; i < rows; ++i) {
                const float* row = x + i * C + c0;
                for (int64_t j = 0; j < w; ++j) {
                    const uint32_t v = key(row[j]);
                    uint32_t* h = heaps.data() + j * m;
                    if (v <= h[0])
                        continue;
                    std::pop_heap(h, h + m, above);
                    h[m - 1] = v;
                    std::push_heap(h, h + m, above);
                }
            }
            for (int64_t j = 0; j < w; ++j) {
                const uint32_t bits = heaps[size_t(j * m)];
                std::memcpy(&out[size_t(c0 + j)], &bits, sizeof bits);
            }
        }
    });
    return out;
}

} // namespace

void ChannelStatsAccumulator::add(const at::Tensor& x) {
    const int64_t C = x.size(-1);
    // Statistics stay where the activations live; only finish() brings the results over.
    const at::Tensor rows = x.detach().reshape({-1, C});
    const bool onCpu = rows.device().is_cpu() && rows.scalar_type() == at::kFloat;
    if (!m_min.defined()) {
        const at::TensorOptions moments = rows.options().dtype(at::kDouble);
        m_s1 = at::zeros({C}, moments);
        m_s2 = at::zeros({C}, moments);
        m_s3 = at::zeros({C}, moments);
        m_s4 = at::zeros({C}, moments);
        // Per-token range of the first sample (a window of the calibration set).
        const at::Tensor first = x.dim() >= 3 ? x.select(0, 0) : x;
        m_firstTokenAbsmax = first.reshape({-1, C}).abs().amax(1).to(at::kFloat);
        if (onCpu) {
            const float inf = std::numeric_limits<float>::infinity();
            m_min = at::full({C}, inf, rows.options());
            m_max = at::full({C}, -inf, rows.options());
        } else {
            m_min = rows.amin(0).to(at::kFloat);
            m_max = rows.amax(0).to(at::kFloat);
        }
    } else if (!onCpu) {
        m_min = at::minimum(m_min, rows.amin(0).to(at::kFloat));
        m_max = at::maximum(m_max, rows.amax(0).to(at::kFloat));
    }
    if (onCpu) {
        addRowsOnCpu(rows, m_min, m_max, m_s1, m_s2, m_s3, m_s4);
    } else {
        const at::Tensor d = rows.to(at::kDouble);
        const at::Tensor d2 = d * d;
        m_s1 += d.sum(0);
        m_s2 += d2.sum(0);
        m_s3 += (d2 * d).sum(0);
        m_s4 += (d2 * d2).sum(0);
    }
    m_tokens += rows.size(0);
    if (m_sampled < m_sampleLimit) {
        const int64_t take = std::min(m_sampleLimit - m_sampled, rows.size(0));
        m_sample.push_back(rows.narrow(0, 0, take).to(at::kFloat).clone());
        m_sampled += take;
    }
}

void ChannelStatsAccumulator::addQuantized(const at::Tensor& xq) {
    if (m_quantizedSampled >= m_sampleLimit)
        return;
    const at::Tensor rows = xq.detach().reshape({-1, xq.size(-1)});
    const int64_t take = std::min(m_sampleLimit - m_quantizedSampled, rows.size(0));
    m_quantizedSample.push_back(rows.narrow(0, 0, take).to(at::kFloat).clone());
    m_quantizedSampled += take;
}

ChannelStatistics ChannelStatsAccumulator::finish(double percentileLevel) const {
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
    s.percentile = sample.device().is_cpu() && sample.scalar_type() == at::kFloat
                       ? absPercentileOnCpu(sample, k)
                       : toVector(std::get<0>(at::kthvalue(sample.abs(), k, 0)));
    s.histogram = histogramOf(sample, kHistogramBins);
    s.tokenAbsmax = toVector(m_firstTokenAbsmax);
    return s;
}

Histogram ChannelStatsAccumulator::quantizedHistogram(const Histogram& over) const {
    if (m_quantizedSample.empty())
        return {};
    return histogramOf(at::cat(m_quantizedSample, 0), kHistogramBins, over.lo, over.hi);
}

void ChannelStatsAccumulator::skipSamples(int64_t tokensBefore) {
    m_sampleLimit = std::max<int64_t>(0, kSampleTokens - tokensBefore);
}

namespace {

void appendTensor(std::vector<double>& out, const at::Tensor& t) {
    if (!t.defined()) {
        out.push_back(-1);
        return;
    }
    const at::Tensor d = t.detach().to(at::kCPU, at::kDouble).contiguous();
    out.push_back(double(d.dim()));
    for (const int64_t n : d.sizes())
        out.push_back(double(n));
    out.insert(out.end(), d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

at::Tensor readTensor(const double*& p, at::ScalarType dtype, const at::Device& device) {
    const int64_t dims = int64_t(*p++);
    if (dims < 0)
        return {};
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < dims; ++i)
        sizes.push_back(int64_t(*p++));
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(at::kDouble));
    std::copy(p, p + t.numel(), t.data_ptr<double>());
    p += t.numel();
    return t.to(device, dtype);
}

void appendSamples(std::vector<double>& out, const std::vector<at::Tensor>& samples) {
    out.push_back(double(samples.size()));
    for (const at::Tensor& s : samples)
        appendTensor(out, s);
}

std::vector<at::Tensor> readSamples(const double*& p, const at::Device& device) {
    std::vector<at::Tensor> samples(size_t(*p++));
    for (at::Tensor& s : samples)
        s = readTensor(p, at::kFloat, device);
    return samples;
}

// `later`'s samples after `mine`, up to kSampleTokens rows in all (as add() takes them).
void appendRows(std::vector<at::Tensor>& mine, int64_t& taken, const std::vector<at::Tensor>& later,
                int64_t limit) {
    for (const at::Tensor& s : later) {
        if (taken >= limit)
            return;
        const int64_t take = std::min(limit - taken, s.size(0));
        mine.push_back(take == s.size(0) ? s : s.narrow(0, 0, take).clone());
        taken += take;
    }
}

} // namespace

void ChannelStatsAccumulator::appendState(std::vector<double>& out) const {
    out.push_back(double(m_tokens));
    for (const at::Tensor* t : {&m_min, &m_max, &m_s1, &m_s2, &m_s3, &m_s4, &m_firstTokenAbsmax})
        appendTensor(out, *t);
    appendSamples(out, m_sample);
    appendSamples(out, m_quantizedSample);
}

ChannelStatsAccumulator ChannelStatsAccumulator::fromState(const double*& p,
                                                           const at::Device& device) {
    ChannelStatsAccumulator a;
    a.m_tokens = int64_t(*p++);
    a.m_min = readTensor(p, at::kFloat, device);
    a.m_max = readTensor(p, at::kFloat, device);
    for (at::Tensor* t : {&a.m_s1, &a.m_s2, &a.m_s3, &a.m_s4})
        *t = readTensor(p, at::kDouble, device);
    a.m_firstTokenAbsmax = readTensor(p, at::kFloat, device);
    a.m_sample = readSamples(p, device);
    a.m_quantizedSample = readSamples(p, device);
    for (const at::Tensor& s : a.m_sample)
        a.m_sampled += s.size(0);
    for (const at::Tensor& s : a.m_quantizedSample)
        a.m_quantizedSampled += s.size(0);
    return a;
}

void ChannelStatsAccumulator::merge(const ChannelStatsAccumulator& later) {
    if (!later.m_min.defined() && later.m_quantizedSample.empty())
        return;
    if (!m_min.defined()) {
        m_min = later.m_min;
        m_max = later.m_max;
        m_s1 = later.m_s1;
        m_s2 = later.m_s2;
        m_s3 = later.m_s3;
        m_s4 = later.m_s4;
        m_firstTokenAbsmax = later.m_firstTokenAbsmax;
    } else if (later.m_min.defined()) {
        // NaN propagates, as in add().
        m_min = at::minimum(m_min, later.m_min);
        m_max = at::maximum(m_max, later.m_max);
        m_s1 = m_s1 + later.m_s1;
        m_s2 = m_s2 + later.m_s2;
        m_s3 = m_s3 + later.m_s3;
        m_s4 = m_s4 + later.m_s4;
    }
    m_tokens += later.m_tokens;
    appendRows(m_sample, m_sampled, later.m_sample, m_sampleLimit);
    appendRows(m_quantizedSample, m_quantizedSampled, later.m_quantizedSample, m_sampleLimit);
}

} // namespace qs
