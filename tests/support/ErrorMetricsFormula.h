// The per-layer error metrics by their formulas, element by element in double on the host
// (docs/fidelity.md), for the suites that check analysis/ErrorAccumulator and what the analysis
// reports against them:
//   mse = Σd²/n, sqnr = 10 log10(Σr² / Σd²), cosine = Σar / sqrt(Σa² Σr²),
//   maxAbs = max |d|, meanRelative = Σ |d| / (|r| + eps) / n,   d = a - r.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace qs::test {

struct ErrorFormula {
    double mse = 0, sqnrDb = 0, cosine = 0, maxAbs = 0, meanRelative = 0;
};

inline ErrorFormula errorMetricsFormula(const at::Tensor& a, const at::Tensor& r, double eps) {
    const at::Tensor ad = a.to(at::kDouble).contiguous(), rd = r.to(at::kDouble).contiguous();
    const double* pa = ad.data_ptr<double>();
    const double* pr = rd.data_ptr<double>();
    const int64_t n = ad.numel();
    double sse = 0, rr = 0, aa = 0, ar = 0, maxAbs = 0, rel = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double d = pa[i] - pr[i];
        sse += d * d;
        rr += pr[i] * pr[i];
        aa += pa[i] * pa[i];
        ar += pa[i] * pr[i];
        maxAbs = std::max(maxAbs, std::fabs(d));
        rel += std::fabs(d) / (std::fabs(pr[i]) + eps);
    }
    return {sse / double(n), 10.0 * std::log10(rr / sse), ar / std::sqrt(aa * rr), maxAbs,
            rel / double(n)};
}

} // namespace qs::test
