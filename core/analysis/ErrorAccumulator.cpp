#include "analysis/ErrorAccumulator.h"

#include "util/HostTensor.h"

#include <cmath>
#include <limits>

namespace qs {

void ErrorAccumulator::add(const at::Tensor& value, const at::Tensor& reference) {
    if (value.numel() == 0)
        return;
    const at::Tensor a = value.to(at::kDouble).reshape(-1);
    const at::Tensor r = reference.to(at::kDouble).reshape(-1);
    const at::Tensor d = a - r;
    const at::Tensor ad = d.abs();
    // Every sum where the tensors live, then one transfer of six numbers.
    const std::vector<double> s = hostVector<double>(at::stack(
        {d.dot(d), r.dot(r), a.dot(a), a.dot(r), ad.max(), (ad / (r.abs() + kRelativeEps)).sum()}));
    m_sse += s[0];
    m_refSq += s[1];
    m_valSq += s[2];
    m_dot += s[3];
    m_maxAbs = std::max(m_maxAbs, s[4]);
    m_rel += s[5];
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
        const std::vector<double> range = hostVector<double>(at::stack({finite.min(), finite.max()}));
        lo = range[0];
        hi = range[1];
        if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        }
    }
    h.lo = lo;
    h.hi = hi;
    // Counted where the tensor lives; only the bins cross to the host.
    h.counts = hostVector<int64_t>(at::histc(finite.clamp(lo, hi), bins, lo, hi));
    return h;
}

} // namespace qs
