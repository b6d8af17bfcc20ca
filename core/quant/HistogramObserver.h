// Per-tensor histogram of the observed values, the common base of the percentile and MSE
// observers (Quark's PerTensorHistogramObserver). Symmetric specs histogram |x| over [0, max];
// asymmetric specs histogram x over [min, max]. Later calls widen the range by whole bins of the
// first call's width. Non-finite values are not counted.
#pragma once

#include "quant/Observer.h"

#include <vector>

namespace qs::quant {

class HistogramObserver : public Observer {
public:
    const std::vector<double>& counts() const { return m_counts; }
    double lowEdge() const { return m_lo; }
    double binWidth() const { return m_width; }
    // Left edge of bin i (i == counts().size() gives the right end).
    double edge(int64_t i) const { return m_lo + static_cast<double>(i) * m_width; }

protected:
    HistogramObserver(QuantSpec spec, int bins, bool skipZeros);

    void doObserve(const at::Tensor& x) override;
    void doReset() override;

    // Parameters of the spec for the clipping range [lo, hi] (0-dim fp32 statistics, as Quark
    // feeds its histogram results to calculate_qparams).
    QuantParams paramsForRange(double lo, double hi) const;
    double total() const;

private:
    int m_initialBins;
    bool m_skipZeros;
    std::vector<double> m_counts;
    double m_lo = 0.0;
    double m_width = 0.0;
};

} // namespace qs::quant
