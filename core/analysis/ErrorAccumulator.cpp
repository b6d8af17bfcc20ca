#include "analysis/ErrorAccumulator.h"

#include "util/HostTensor.h"
#include "util/VectorExp.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <limits>

namespace qs {

namespace {

// The six sums of one chunk, in double.
struct ErrorSums {
    double sse = 0, refSq = 0, valSq = 0, dot = 0, maxAbs = 0, rel = 0;
};

#if QS_HAVE_VECTOR_EXP
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double Doubles4 __attribute__((vector_size(32)));
typedef float Floats4 __attribute__((vector_size(16)));
typedef int64_t Longs4 __attribute__((vector_size(32)));

QS_VEC_INLINE Doubles4 load4(const float* p) {
    Floats4 v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, Doubles4);
}
#endif

// The six sums of elements [begin, end), in double: four lanes of partial sums (element i in
// lane i mod 4 from the chunk's start), combined in a fixed order, then the tail.
QS_VEC_MULTIVERSION ErrorSums chunkErrorSums(const float* pa, const float* pr, int64_t begin,
                                             int64_t end, double eps) {
    ErrorSums s;
    int64_t i = begin;
#if QS_HAVE_VECTOR_EXP
    Doubles4 sse{}, refSq{}, valSq{}, dot{}, maxAbs{}, rel{};
    for (; i + 4 <= end; i += 4) {
        const Doubles4 x = load4(pa + i), y = load4(pr + i), d = x - y;
        const Doubles4 ad = d < 0 ? -d : d, ay = y < 0 ? -y : y;
        sse += d * d;
        refSq += y * y;
        valSq += x * x;
        dot += x * y;
        const Longs4 take = (ad > maxAbs) | (ad != ad); // NaN propagates
        maxAbs = take ? ad : maxAbs;
        rel += ad / (ay + eps);
    }
    for (int k = 0; k < 4; ++k) {
        s.sse += sse[k];
        s.refSq += refSq[k];
        s.valSq += valSq[k];
        s.dot += dot[k];
        s.maxAbs = std::isnan(maxAbs[k]) || maxAbs[k] > s.maxAbs ? maxAbs[k] : s.maxAbs;
        s.rel += rel[k];
    }
#endif
    for (; i < end; ++i) {
        const double x = pa[i], y = pr[i], d = x - y, ad = std::fabs(d);
        s.sse += d * d;
        s.refSq += y * y;
        s.valSq += x * x;
        s.dot += x * y;
        s.maxAbs = std::isnan(ad) || ad > s.maxAbs ? ad : s.maxAbs;
        s.rel += ad / (std::fabs(y) + eps);
    }
    return s;
}

// CPU float32 fast path: one pass over both tensors instead of a dozen ATen ops with double
// temporaries. Chunks of fixed length are summed in parallel and combined in chunk order, so
// the result does not depend on the thread count.
ErrorSums cpuErrorSums(const at::Tensor& value, const at::Tensor& reference, double eps) {
    const at::Tensor a = value.contiguous(), r = reference.contiguous();
    const float* pa = a.data_ptr<float>();
    const float* pr = r.data_ptr<float>();
    const int64_t n = a.numel();
    constexpr int64_t kChunk = int64_t(1) << 15;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<ErrorSums> partial(static_cast<size_t>(chunks));
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c)
            partial[size_t(c)] =
                chunkErrorSums(pa, pr, c * kChunk, std::min(n, (c + 1) * kChunk), eps);
    });
    ErrorSums total;
    for (const ErrorSums& s : partial) {
        total.sse += s.sse;
        total.refSq += s.refSq;
        total.valSq += s.valSq;
        total.dot += s.dot;
        total.maxAbs = std::isnan(s.maxAbs) || s.maxAbs > total.maxAbs ? s.maxAbs : total.maxAbs;
        total.rel += s.rel;
    }
    return total;
}

} // namespace

void ErrorAccumulator::add(const at::Tensor& value, const at::Tensor& reference) {
    if (value.numel() == 0)
        return;
    if (value.device().is_cpu() && reference.device().is_cpu() &&
        value.scalar_type() == at::kFloat && reference.scalar_type() == at::kFloat &&
        value.numel() == reference.numel()) {
        const ErrorSums s = cpuErrorSums(value, reference, kRelativeEps);
        const double batch[kStateSize] = {
            s.sse, s.refSq, s.valSq, s.dot, s.maxAbs, s.rel, double(value.numel())};
        const double* p = batch;
        merge(fromState(p)); // one batch folds in as a later shard does
        return;
    }
    const at::Tensor a = value.to(at::kDouble).reshape(-1);
    const at::Tensor r = reference.to(at::kDouble).reshape(-1);
    const at::Tensor d = a - r;
    const at::Tensor ad = d.abs();
    // Every sum where the tensors live, then one transfer of six numbers.
    const std::vector<double> s = hostVector<double>(at::stack(
        {d.dot(d), r.dot(r), a.dot(a), a.dot(r), ad.max(), (ad / (r.abs() + kRelativeEps)).sum()}));
    const double batch[kStateSize] = {s[0], s[1], s[2], s[3], s[4], s[5], double(a.numel())};
    const double* p = batch;
    merge(fromState(p));
}

void ErrorAccumulator::appendState(std::vector<double>& out) const {
    out.insert(out.end(), {m_sse, m_refSq, m_valSq, m_dot, m_maxAbs, m_rel, double(m_count)});
}

ErrorAccumulator ErrorAccumulator::fromState(const double*& p) {
    ErrorAccumulator a;
    a.m_sse = p[0];
    a.m_refSq = p[1];
    a.m_valSq = p[2];
    a.m_dot = p[3];
    a.m_maxAbs = p[4];
    a.m_rel = p[5];
    a.m_count = int64_t(p[6]);
    p += kStateSize;
    return a;
}

void ErrorAccumulator::merge(const ErrorAccumulator& later) {
    // The one fold: add() brings each batch's sums in through it too.
    m_sse += later.m_sse;
    m_refSq += later.m_refSq;
    m_valSq += later.m_valSq;
    m_dot += later.m_dot;
    m_maxAbs = std::isnan(later.m_maxAbs) || later.m_maxAbs > m_maxAbs ? later.m_maxAbs : m_maxAbs;
    m_rel += later.m_rel;
    m_count += later.m_count;
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

namespace {

// The bins of elements [begin, end) of `p`, bin = floor((min(max(v, lo), hi) - lo) * scale) at
// most bins - 1, non-finite values skipped, counted into four sub-histograms of `bins` each (one
// per vector lane; which one takes a value does not matter, they are summed). The lanes compute
// exactly the scalar tail's doubles.
QS_VEC_MULTIVERSION void countBins(const float* p, int64_t begin, int64_t end, double lo, double hi,
                                   double scale, int64_t bins, int64_t* sub) {
    int64_t i = begin;
#if QS_HAVE_VECTOR_EXP
    typedef int32_t Ints4 __attribute__((vector_size(16)));
    const Doubles4 vlo = Doubles4{} + lo, vhi = Doubles4{} + hi, vscale = Doubles4{} + scale;
    for (; i + 4 <= end; i += 4) {
        Doubles4 v = load4(p + i);
        const Longs4 finite = (v - v) == 0; // false for inf and NaN
        v = v < vlo ? vlo : v;
        v = vhi < v ? vhi : v;
        const Doubles4 f = finite ? (v - vlo) * vscale : Doubles4{};
        const Ints4 b = __builtin_convertvector(f, Ints4);
        for (int k = 0; k < 4; ++k)
            if (finite[k])
                ++sub[size_t(k * bins + std::min<int64_t>(bins - 1, b[k]))];
    }
#endif
    for (; i < end; ++i) {
        if (!std::isfinite(p[i]))
            continue;
        const double v = std::min(std::max(double(p[i]), lo), hi);
        ++sub[size_t(std::min<int64_t>(bins - 1, int64_t((v - lo) * scale)))];
    }
}

#if QS_HAVE_VECTOR_EXP
#pragma GCC diagnostic pop
#endif

// CPU float32 fast path of histogramOf: one pass for the finite range, one for the counts
// (bin = floor((v - lo) / (hi - lo) * bins), the top edge in the last bin, values outside
// [lo, hi] clamped into the end bins as the ATen path clamps them). Both passes run over fixed
// chunks in parallel; min, max and integer counts combine exactly in any order.
Histogram cpuHistogram(const at::Tensor& x, int64_t bins, double lo, double hi) {
    Histogram h;
    const at::Tensor c = x.contiguous();
    const float* p = c.data_ptr<float>();
    const int64_t n = c.numel();
    constexpr int64_t kChunk = int64_t(1) << 16;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    if (lo == hi) {
        const double inf = std::numeric_limits<double>::infinity();
        std::vector<double> mins(size_t(chunks), inf), maxs(size_t(chunks), -inf);
        at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
            for (int64_t k = begin; k < end; ++k) {
                float mn = std::numeric_limits<float>::infinity(), mx = -mn;
                for (int64_t i = k * kChunk, stop = std::min(n, i + kChunk); i < stop; ++i) {
                    if (!std::isfinite(p[i]))
                        continue;
                    mn = std::min(mn, p[i]);
                    mx = std::max(mx, p[i]);
                }
                mins[size_t(k)] = mn;
                maxs[size_t(k)] = mx;
            }
        });
        const double mn = chunks ? *std::min_element(mins.begin(), mins.end()) : inf;
        const double mx = chunks ? *std::max_element(maxs.begin(), maxs.end()) : -inf;
        if (mn > mx)
            return h; // nothing finite
        lo = mn;
        hi = mx;
        if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        }
    }
    h.lo = lo;
    h.hi = hi;
    h.counts.assign(size_t(bins), 0);
    const double scale = double(bins) / (hi - lo);
    // Per chunk, four sub-histograms: neighbours often fall in one bin, and one counter would
    // make each increment wait for the last. Integer counts: the sum is exact in any order.
    std::vector<int64_t> partial(size_t(chunks * 4 * bins), 0);
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k)
            countBins(p, k * kChunk, std::min(n, (k + 1) * kChunk), lo, hi, scale, bins,
                      partial.data() + k * 4 * bins);
    });
    for (size_t j = 0; j < partial.size(); ++j)
        h.counts[j % size_t(bins)] += partial[j];
    return h;
}

} // namespace

Histogram histogramOf(const at::Tensor& x, int64_t bins, double lo, double hi) {
    if (x.device().is_cpu() && x.scalar_type() == at::kFloat && bins > 0)
        return cpuHistogram(x, bins, lo, hi);
    Histogram h;
    const at::Tensor f = x.to(at::kFloat).reshape(-1);
    const at::Tensor finite = f.masked_select(at::isfinite(f));
    if (finite.numel() == 0)
        return h;
    if (lo == hi) {
        const std::vector<double> range =
            hostVector<double>(at::stack({finite.min(), finite.max()}));
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
