#pragma once

#include "analysis/LayerReport.h"

#include <ATen/ATen.h>

#include <vector>

namespace qs {

// Streams (value, reference) tensor pairs and sums what the error metrics need, in double.
class ErrorAccumulator {
public:
    // Quark's debug tool adds an epsilon to |reference| in its relative error.
    static constexpr double kRelativeEps = 1e-8;

    void add(const at::Tensor& value, const at::Tensor& reference);
    ErrorMetrics metrics() const;
    bool empty() const { return m_count == 0; }

    // The sums as doubles (the count is exact below 2^53), and back: how a distributed analysis
    // moves one calibration shard's accumulator to the other ranks. fromState reads kStateSize
    // values at `p` and advances it.
    static constexpr size_t kStateSize = 7;
    void appendState(std::vector<double>& out) const;
    static ErrorAccumulator fromState(const double*& p);
    // Adds what `later` took after what this one took: accumulators of consecutive calibration
    // batches merged in batch order give the bits one accumulator fed every batch gives (each
    // batch's sums are added to the running ones, and 0 + x is x).
    void merge(const ErrorAccumulator& later);

private:
    double m_sse = 0.0, m_refSq = 0.0, m_valSq = 0.0, m_dot = 0.0, m_maxAbs = 0.0, m_rel = 0.0;
    int64_t m_count = 0;
};

// Equal-width histogram of `x` over [lo, hi] (computed from x when lo == hi).
Histogram histogramOf(const at::Tensor& x, int64_t bins, double lo = 0.0, double hi = 0.0);

} // namespace qs
