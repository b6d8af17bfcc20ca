#include "quant/HistogramObserver.h"

#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace qs::quant {

HistogramObserver::HistogramObserver(QuantSpec spec, int bins, bool skipZeros)
    : Observer(std::move(spec)), m_initialBins(bins), m_skipZeros(skipZeros) {
    if (bins < 2)
        throw Error("observer", "bins", "a histogram needs at least 2 bins");
}

void HistogramObserver::doObserve(const at::Tensor& x) {
    const at::Tensor xf = toHost(x.detach().to(at::kFloat)).view(-1);
    const float* p = xf.data_ptr<float>();
    const bool symmetric = m_spec.symmetric;
    std::vector<float> values;
    values.reserve(static_cast<size_t>(xf.numel()));
    for (int64_t i = 0; i < xf.numel(); ++i) {
        const float v = p[i];
        if (!std::isfinite(v) || (m_skipZeros && v == 0.0f))
            continue;
        values.push_back(symmetric ? std::fabs(v) : v);
    }
    if (values.empty())
        return;
    const auto [mnIt, mxIt] = std::minmax_element(values.begin(), values.end());
    double lo = symmetric ? 0.0 : *mnIt;
    double hi = *mxIt;
    if (lo == hi) {
        // Quark nudges the top so a constant input still spans num_bins distinct fp32 bins.
        const double span = std::max(std::fabs(lo), 1.0) * m_initialBins * FLT_EPSILON;
        hi = lo + std::max(span, static_cast<double>(FLT_MIN));
    }
    if (m_counts.empty()) {
        m_lo = lo;
        m_width = (hi - lo) / m_initialBins;
        m_counts.assign(static_cast<size_t>(m_initialBins), 0.0);
    } else {
        if (lo < m_lo) {
            const auto extra = static_cast<size_t>(std::ceil((m_lo - lo) / m_width));
            m_counts.insert(m_counts.begin(), extra, 0.0);
            m_lo -= static_cast<double>(extra) * m_width;
        }
        const double top = edge(static_cast<int64_t>(m_counts.size()));
        if (hi > top) {
            const auto extra = static_cast<size_t>(std::ceil((hi - top) / m_width));
            m_counts.insert(m_counts.end(), extra, 0.0);
        }
    }
    const auto n = static_cast<int64_t>(m_counts.size());
    for (const float v : values) {
        auto idx = static_cast<int64_t>(std::floor((v - m_lo) / m_width));
        idx = std::clamp<int64_t>(idx, 0, n - 1); // the maximum itself lands in the last bin
        m_counts[static_cast<size_t>(idx)] += 1.0;
    }
}

void HistogramObserver::doReset() {
    m_counts.clear();
    m_lo = 0.0;
    m_width = 0.0;
}

double HistogramObserver::total() const {
    double t = 0.0;
    for (const double c : m_counts)
        t += c;
    return t;
}

QuantParams HistogramObserver::paramsForRange(double lo, double hi) const {
    Range r;
    r.min = at::scalar_tensor(static_cast<float>(lo), at::kFloat);
    r.max = at::scalar_tensor(static_cast<float>(hi), at::kFloat);
    r.inputDtype = at::kFloat;
    return computeParams(m_spec, r);
}

} // namespace qs::quant
