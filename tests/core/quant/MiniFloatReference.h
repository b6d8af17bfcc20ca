// Independent minifloat reference for the tests: values decoded from the OCP bit layout, and
// rounding as a brute-force nearest-value search over the decoded table (ties to the even code,
// saturating at the largest finite value). Deliberately slow and plain.
#pragma once

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace qs::quant::test {

struct RefFormat {
    int ebits, mbits, bias;
    bool nanOnly; // E4M3: S.1111.111 is NaN, no infinity
    bool infNan;  // E5M2: E = all ones is Inf/NaN
};

constexpr RefFormat kRefE4M3{4, 3, 7, true, false};
constexpr RefFormat kRefE5M2{5, 2, 15, false, true};
constexpr RefFormat kRefE3M2{3, 2, 3, false, false};
constexpr RefFormat kRefE2M3{2, 3, 1, false, false};
constexpr RefFormat kRefE2M1{2, 1, 1, false, false};

inline double refDecode(unsigned code, const RefFormat& f) {
    const unsigned e = (code >> f.mbits) & ((1u << f.ebits) - 1);
    const unsigned m = code & ((1u << f.mbits) - 1);
    const bool neg = (code >> (f.ebits + f.mbits)) & 1u;
    double v;
    if (f.nanOnly && e == (1u << f.ebits) - 1 && m == (1u << f.mbits) - 1)
        v = std::numeric_limits<double>::quiet_NaN();
    else if (f.infNan && e == (1u << f.ebits) - 1)
        v = m == 0 ? std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::quiet_NaN();
    else if (e == 0)
        v = m * std::pow(2.0, 1 - f.bias - f.mbits);
    else
        v = (1.0 + m / std::pow(2.0, f.mbits)) * std::pow(2.0, int(e) - f.bias);
    return neg ? -v : v;
}

// (code, value) of the non-negative finite values.
inline const std::vector<std::pair<unsigned, double>>& refTable(const RefFormat& f) {
    static std::vector<std::pair<unsigned, double>> tables[5];
    const RefFormat* all[] = {&kRefE4M3, &kRefE5M2, &kRefE3M2, &kRefE2M3, &kRefE2M1};
    int idx = 0;
    for (int i = 0; i < 5; ++i)
        if (all[i]->ebits == f.ebits && all[i]->mbits == f.mbits)
            idx = i;
    auto& t = tables[idx];
    if (t.empty()) {
        for (unsigned c = 0; c < (1u << (f.ebits + f.mbits)); ++c) {
            const double v = refDecode(c, f);
            if (std::isfinite(v))
                t.push_back({c, v});
        }
    }
    return t;
}

// Nearest representable value and its (unsigned) code.
inline std::pair<double, unsigned> refNearest(double x, const RefFormat& f) {
    const auto& table = refTable(f);
    if (std::fabs(x) >= table.back().second) // saturate
        return {table.back().second, table.back().first};
    double best = 0, bestDist = std::numeric_limits<double>::infinity();
    unsigned bestCode = 0;
    for (const auto& [c, v] : table) {
        const double d = std::fabs(v - std::fabs(x));
        if (d < bestDist || (d == bestDist && (c & 1u) == 0 && (bestCode & 1u))) {
            best = v;
            bestDist = d;
            bestCode = c;
        }
    }
    return {best, bestCode};
}

// FP8 as Quark casts it: clamp (Inf saturates), NaN stays, sign of zero kept.
inline float refFp8(float x, const RefFormat& f) {
    if (std::isnan(x))
        return x;
    const double r = refNearest(x, f).first;
    return static_cast<float>(std::signbit(x) ? -r : r);
}

// FP4/FP6 as Quark's fake_quantize_element: NaN/Inf pass through, zero results are +0.
inline float refElement(float x, const RefFormat& f) {
    if (!std::isfinite(x))
        return x;
    const double r = refNearest(x, f).first;
    if (r == 0.0)
        return 0.0f;
    return static_cast<float>(std::signbit(x) ? -r : r);
}

// Code of a rounded value (sign in the top bit).
inline unsigned refCode(float v, const RefFormat& f) {
    const unsigned sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u;
    return sign | refNearest(v, f).second;
}

// OCP MX shared scale in Quark's 'even' mode: amax = sig * 2^n with sig in [1, 2) goes to
// 2^(n+1) when sig >= 2 - 2^-(mbits+1); scale = 2^clamp(n - emax, -127, 127).
inline float refEvenScale(float amax, int mbits, int emax) {
    if (std::isnan(amax))
        return amax;
    if (std::isinf(amax))
        return std::ldexp(1.0f, 127);
    const double up = 1.0 - std::ldexp(1.0, -(mbits + 1));
    int n;
    if (amax == 0.0f) {
        n = -126;
    } else if (amax < std::ldexp(1.0f, -126)) {
        n = amax >= std::ldexp(up, -126) ? -126 : -1000;
    } else {
        int e;
        const double m = std::frexp(double(amax), &e);
        n = e - 1 + (2 * m >= 1.0 + up ? 1 : 0);
    }
    return std::ldexp(1.0f, std::max(-127, std::min(127, n - emax)));
}

} // namespace qs::quant::test
