#include "analysis/ErrorAccumulator.h"

#include <cmath>
#include <limits>

namespace qs {

void ErrorAccumulator::add(const at::Tensor& value, const at::Tensor& reference) {
    const at::Tensor a = value.to(at::kDouble).reshape(-1);
    const at::Tensor r = reference.to(at::kDouble).reshape(-1);
    const at::Tensor d = a - r;
    m_sse += d.pow(2).sum().item<double>();
    m_refSq += r.pow(2).sum().item<double>();
    m_valSq += a.pow(2).sum().item<double>();
    m_dot += (a * r).sum().item<double>();
    if (d.numel() > 0)
        m_maxAbs = std::max(m_maxAbs, d.abs().max().item<double>());
    m_rel += (d.abs() / (r.abs() + kRelativeEps)).sum().item<double>();
    m_count += a.numel();
}

ErrorMetrics ErrorAccumulator::metrics() const {
    ErrorMetrics m;
    if (m_count == 0)
        return m;
    m.valid = true;
    m.mse = m_sse / double(m_count);
    m.sqnrDb =
        m_sse > 0 ? 10.0 * std::log10(m_refSq / m_sse) : std::numeric_limits<double>::infinity();
    const double denom = std::sqrt(m_valSq * m_refSq);
    m.cosine = denom > 0 ? m_dot / denom : (m_sse == 0 ? 1.0 : 0.0);
    m.maxAbs = m_maxAbs;
    m.meanRelative = m_rel / double(m_count);
    return m;
}

Histogram histogramOf(const at::Tensor& x, int64_t bins, double lo, double hi) {
    Histogram h;
    const at::Tensor f = x.to(at::kFloat).reshape(-1);
    const at::Tensor finite = f.masked_select(at::isfinite(f));
    if (finite.numel() == 0)
        return h;
    if (lo == hi) {
        lo = finite.min().item<double>();
        hi = finite.max().item<double>();
        if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        }
    }
    h.lo = lo;
    h.hi = hi;
    const at::Tensor counts = at::histc(finite.clamp(lo, hi), bins, lo, hi).to(at::kLong);
    h.counts.assign(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + bins);
    return h;
}

} // namespace qs
