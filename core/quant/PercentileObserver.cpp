#include "quant/PercentileObserver.h"

#include "util/Error.h"

#include <algorithm>

namespace qs::quant {

PercentileObserver::PercentileObserver(QuantSpec spec, const ObserverOptions& options)
    : HistogramObserver(std::move(spec), options.percentileBins, options.percentileSkipZeros),
      m_percentile(options.percentile) {
    if (!(m_percentile > 0.0 && m_percentile <= 100.0))
        throw Error("observer", "percentile", "must be in (0, 100]");
}

std::pair<double, double> PercentileObserver::clipRange() const {
    const double sum = total();
    if (sum <= 0.0)
        return {0.0, 0.0}; // nothing but zeros seen: Quark returns a zero range too
    const auto& c = counts();
    // Left edge of the first bin whose cumulative share reaches `share` (counted in whole
    // values, so no rounding of a running fraction can skip the bin).
    auto edgeAt = [&](double share) {
        const double needed = share * sum;
        double cumulative = 0.0;
        for (size_t i = 0; i < c.size(); ++i) {
            cumulative += c[i];
            if (cumulative >= needed)
                return edge(static_cast<int64_t>(i));
        }
        return edge(static_cast<int64_t>(c.size()) - 1);
    };
    if (m_spec.symmetric)
        return {0.0, edgeAt(std::min(m_percentile / 100.0, 1.0))};
    const double tail = (100.0 - m_percentile) / 200.0;
    return {edgeAt(tail), edgeAt(1.0 - tail)};
}

QuantParams PercentileObserver::doParams() const {
    const auto [lo, hi] = clipRange();
    return paramsForRange(lo, hi);
}

} // namespace qs::quant
