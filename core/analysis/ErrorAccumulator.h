#pragma once

#include "analysis/LayerReport.h"

#include <ATen/ATen.h>

namespace qs {

// Streams (value, reference) tensor pairs and sums what the error metrics need, in double.
class ErrorAccumulator {
public:
    // Quark's debug tool adds an epsilon to |reference| in its relative error.
    static constexpr double kRelativeEps = 1e-8;

    void add(const at::Tensor& value, const at::Tensor& reference);
    ErrorMetrics metrics() const;
    bool empty() const { return m_count == 0; }

private:
    double m_sse = 0.0, m_refSq = 0.0, m_valSq = 0.0, m_dot = 0.0, m_maxAbs = 0.0, m_rel = 0.0;
    int64_t m_count = 0;
};

// Equal-width histogram of `x` over [lo, hi] (computed from x when lo == hi).
Histogram histogramOf(const at::Tensor& x, int64_t bins, double lo = 0.0, double hi = 0.0);

} // namespace qs
