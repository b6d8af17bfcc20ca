#include "quant/MseObserver.h"

#include "quant/FloatFormats.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace qs::quant {

MseObserver::MseObserver(QuantSpec spec, const ObserverOptions& options)
    : HistogramObserver(std::move(spec), options.mseBins, false), m_startBin(options.mseStartBin),
      m_stride(options.mseStride) {
    if (m_stride < 1 || m_startBin < 0)
        throw Error("observer", "mse_search", "start bin must be >= 0 and stride >= 1");
}

double MseObserver::candidateError(double lo, double hi) const {
    const QuantParams p = paramsForRange(lo, hi);
    const TypeTraits& t = traits(m_spec.dtype);
    const auto s = static_cast<float>(hostScalar(p.scale.to(at::kFloat)));
    const auto zp = static_cast<float>(hostScalar(p.zeroPoint));
    const auto& c = counts();
    double err = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
        if (c[i] == 0.0)
            continue;
        const auto centre = static_cast<float>(edge(static_cast<int64_t>(i)) + binWidth() / 2);
        float q;
        if (t.encoding == Encoding::Int) {
            // torch.fake_quantize_per_tensor_affine, as Quark's int_fake_tensor_quant.
            const float inv = 1.0f / s;
            const float code =
                std::clamp(std::nearbyint(centre * inv) + zp, float(t.qmin), float(t.qmax));
            q = (code - zp) * s;
        } else {
            const MiniFloatFormat& f = m_spec.dtype == DataType::Fp8E4M3 ? kFp8E4M3 : kFp8E5M2;
            q = roundFp8(centre / s, f) * s;
        }
        const double d = static_cast<double>(q) - centre;
        err += d * d * c[i];
    }
    return err / static_cast<double>(c.size());
}

std::pair<double, double> MseObserver::clipRange() const {
    const auto n = static_cast<int64_t>(counts().size());
    if (n == 0)
        return {0.0, 0.0};
    auto centre = [&](int64_t i) { return edge(i) + binWidth() / 2; };
    const int64_t start = std::min<int64_t>(m_startBin, n - 1);
    double best = std::numeric_limits<double>::infinity();
    std::pair<double, double> bestRange{0.0, centre(n - 1)};
    for (int64_t i = start; i < n; i += m_stride) {
        const double hi = centre(i);
        const double lo = m_spec.symmetric ? 0.0 : centre(n - 1 - i);
        if (lo > hi)
            continue;
        const double e = candidateError(lo, hi);
        if (e < best) { // first minimum wins, like torch.argmin
            best = e;
            bestRange = {lo, hi};
        }
    }
    return bestRange;
}

QuantParams MseObserver::doParams() const {
    const auto [lo, hi] = clipRange();
    return paramsForRange(lo, hi);
}

} // namespace qs::quant
