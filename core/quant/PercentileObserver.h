// Percentile clipping (Quark PerTensorPercentileObserver): the clipping maximum is the left edge
// of the first histogram bin whose cumulative share reaches the percentile, over |x| with zeros
// skipped by default. Quark's asymmetric branch picks both ends from the lower tail (a bug);
// here an asymmetric spec clips at the (100-p)/2 and 100-(100-p)/2 percentiles instead.
#pragma once

#include "quant/HistogramObserver.h"

namespace qs::quant {

class PercentileObserver : public HistogramObserver {
public:
    PercentileObserver(QuantSpec spec, const ObserverOptions& options = {});

    // The clipping range [lo, hi] the parameters are computed from.
    std::pair<double, double> clipRange() const;

protected:
    QuantParams doParams() const override;

private:
    double m_percentile;
};

} // namespace qs::quant
