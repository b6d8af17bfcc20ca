#include "model/CausalAttention.h"

#include "util/VectorExp.h"

#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#define QS_TORCH_AT_LEAST(major, minor)                                                            \
    (TORCH_VERSION_MAJOR > (major) ||                                                              \
     (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace qs {

namespace {

using namespace vec;

// Keys per block of the score loop (attendUnits).
constexpr int64_t kKeyBlock = 64;

// Where the loop reads and writes, in elements; the last dimension of q, k^T, v and out is
// contiguous.
struct AttentionJob {
    const float* q;
    int64_t qB, qH, qT;
    const float* kt; // [B, nkv, d, ldk]: keys transposed, so one query's scores are a row
    int64_t ldk;
    const float* v;
    int64_t vB, vH, vT;
    float* out; // [B, T, nh, d]
    int64_t B, nh, nkv, T, d, window, rowsPerUnit, unitsPerHead;
    float scale;
};

// The helpers are always inlined so that each clone of attendUnits compiles them for its target.

#if QS_HAVE_VECTOR_EXP
// Scaled scores of the 8U keys from `first` into s, their maximum into vm: U independent
// accumulators of 8 keys, each q[c] broadcast once per U loads of keys.
template <int U>
QS_VEC_INLINE void scoreBlock(const float* q, const float* kt, int64_t ldk, int64_t d,
                              int64_t first, Floats8 vs, Floats8& vm, float* s) {
    Floats8 a[U] = {};
    for (int64_t c = 0; c < d; ++c) {
        const float* k = kt + c * ldk + first;
        const Floats8 qc = splat8(q[c]);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u)
            a[u] += qc * load8(k + 8 * u);
    }
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
        a[u] *= vs;
        vm = a[u] > vm ? a[u] : vm;
        store8(s + 8 * u, a[u]);
    }
}
#endif

// Scaled scores s[j] = (q . k_{lo + j}) * scale for j < n (transformers: (q k^T) * scaling);
// returns their maximum. Keys in blocks of 64: eight independent accumulators keep both FMA
// pipes busy (four left the loop waiting on each multiply-add's latency, at a fifth of the
// core's peak).
QS_VEC_INLINE float scaledScores(const float* q, const float* kt, int64_t ldk, int64_t d,
                                 int64_t lo, int64_t n, float scale, float* s) {
    float m = -std::numeric_limits<float>::infinity();
    int64_t j = 0;
#if QS_HAVE_VECTOR_EXP
    Floats8 vm = splat8(m);
    const Floats8 vs = splat8(scale);
    for (; j + 64 <= n; j += 64)
        scoreBlock<8>(q, kt, ldk, d, lo + j, vs, vm, s + j);
    for (; j + 32 <= n; j += 32)
        scoreBlock<4>(q, kt, ldk, d, lo + j, vs, vm, s + j);
    for (; j + 8 <= n; j += 8)
        scoreBlock<1>(q, kt, ldk, d, lo + j, vs, vm, s + j);
    for (int k = 0; k < 8; ++k)
        m = std::max(m, vm[k]);
    if (j < n) {
        // The last n - j keys as one vector of 8 (kt's rows have 8 keys of padding, s room for
        // 8 more): a scalar loop over d strided loads per key was a fifth of the scores' time.
        Floats8 a{};
        for (int64_t c = 0; c < d; ++c)
            a += splat8(q[c]) * load8(kt + c * ldk + lo + j);
        a *= vs;
        for (int64_t l = 0; l < n - j; ++l) {
            s[j + l] = a[l];
            m = std::max(m, a[l]);
        }
        j = n;
    }
#endif
    for (; j < n; ++j) {
        float a = 0.0f;
        for (int64_t c = 0; c < d; ++c)
            a += q[c] * kt[c * ldk + lo + j];
        s[j] = a * scale;
        m = std::max(m, s[j]);
    }
    return m;
}

// s[j] <- exp(s[j] - max) for j < n (the softmax's numerators); returns their sum.
QS_VEC_INLINE float softmaxNumerators(float* s, int64_t n, float m) {
    float sum = 0.0f;
    int64_t j = 0;
#if QS_HAVE_VECTOR_EXP
    Floats8 acc{};
    const Floats8 vm = splat8(m);
    for (; j + 8 <= n; j += 8) {
        const Floats8 e = expNonPositive(load8(s + j) - vm);
        store8(s + j, e);
        acc += e;
    }
    if (j < n) {
        // The last n - j as one vector (s has room for 8 more; the lanes past n, whatever they
        // hold, are set to exp's lowest input and dropped).
        Floats8 x = load8(s + j) - vm;
        for (int64_t l = n - j; l < 8; ++l)
            x[l] = -87.0f;
        const Floats8 e = expNonPositive(x);
        for (int64_t l = 0; l < n - j; ++l) {
            s[j + l] = e[l];
            acc[l] += e[l];
        }
        j = n;
    }
    for (int k = 0; k < 8; ++k)
        sum += acc[k];
#endif
    for (; j < n; ++j) {
        s[j] = expNonPositive(s[j] - m);
        sum += s[j];
    }
    return sum;
}

// out[c] = sum_j p[j] v_{lo + j}[c] / sum. Columns in blocks of 64 (a head of 64 or 128 in
// one or two): eight accumulators, each value row read once per block as contiguous vectors.
QS_VEC_INLINE void weightedValues(const float* p, const float* v, int64_t vT, int64_t d, int64_t lo,
                                  int64_t n, float invSum, float* out) {
    int64_t c = 0;
#if QS_HAVE_VECTOR_EXP
    for (; c + 64 <= d; c += 64) {
        Floats8 a[8] = {};
        const float* vr = v + lo * vT + c;
        for (int64_t j = 0; j < n; ++j, vr += vT) {
            const Floats8 pj = splat8(p[j]);
#pragma GCC unroll 8
            for (int u = 0; u < 8; ++u)
                a[u] += pj * load8(vr + 8 * u);
        }
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u)
            store8(out + c + 8 * u, a[u] * invSum);
    }
    for (; c + 8 <= d; c += 8) {
        Floats8 a0{}, a1{}, a2{}, a3{};
        const float* vr = v + lo * vT + c;
        int64_t j = 0;
        for (; j + 4 <= n; j += 4, vr += 4 * vT) {
            a0 += splat8(p[j]) * load8(vr);
            a1 += splat8(p[j + 1]) * load8(vr + vT);
            a2 += splat8(p[j + 2]) * load8(vr + 2 * vT);
            a3 += splat8(p[j + 3]) * load8(vr + 3 * vT);
        }
        for (; j < n; ++j, vr += vT)
            a0 += splat8(p[j]) * load8(vr);
        store8(out + c, ((a0 + a1) + (a2 + a3)) * invSum);
    }
#endif
    for (; c < d; ++c) {
        float a = 0.0f;
        for (int64_t j = 0; j < n; ++j)
            a += p[j] * v[(lo + j) * vT + c];
        out[c] = a * invSum;
    }
}

QS_VEC_MULTIVERSION void attendUnits(const AttentionJob& job, int64_t begin, int64_t end) {
    // One row of scores per query row of the unit.
    const int64_t stride = job.T + 8;
    std::vector<float> scores(size_t(job.rowsPerUnit * stride));
    std::vector<float> maxima(size_t(job.rowsPerUnit));
    const int64_t groups = job.nh / job.nkv;
    for (int64_t u = begin; u < end; ++u) {
        const int64_t bh = u / job.unitsPerHead, block = u % job.unitsPerHead;
        const int64_t b = bh / job.nh, h = bh % job.nh, kvh = h / groups;
        const float* kt = job.kt + (b * job.nkv + kvh) * job.d * job.ldk;
        const float* v = job.v + b * job.vB + kvh * job.vH;
        const int64_t first = block * job.rowsPerUnit;
        const int64_t last = std::min(job.T, first + job.rowsPerUnit);
        auto lowest = [&](int64_t i) {
            return job.window > 0 ? std::max<int64_t>(0, i - job.window + 1) : 0;
        };
        // The scores of all the unit's rows one block of keys at a time, so that the block
        // (64 keys x d: 16 KiB for d = 64) is read from L1 by every row, not from L2 by each.
        std::fill(maxima.begin(), maxima.end(), -std::numeric_limits<float>::infinity());
        for (int64_t k0 = lowest(first) / kKeyBlock * kKeyBlock; k0 < last; k0 += kKeyBlock) {
            for (int64_t i = first; i < last; ++i) {
                const int64_t lo = lowest(i);
                const int64_t from = std::max(lo, k0), to = std::min(i + 1, k0 + kKeyBlock);
                if (from >= to)
                    continue;
                const float* q = job.q + b * job.qB + h * job.qH + i * job.qT;
                float* s = scores.data() + (i - first) * stride + (from - lo);
                const float m = scaledScores(q, kt, job.ldk, job.d, from, to - from, job.scale, s);
                maxima[size_t(i - first)] = std::max(maxima[size_t(i - first)], m);
            }
        }
        for (int64_t i = first; i < last; ++i) {
            const int64_t lo = lowest(i), n = i + 1 - lo;
            float* s = scores.data() + (i - first) * stride;
            const float sum = softmaxNumerators(s, n, maxima[size_t(i - first)]);
            float* out = job.out + ((b * job.T + i) * job.nh + h) * job.d;
            weightedValues(s, v, job.vT, job.d, lo, n, 1.0f / sum, out);
        }
    }
}

} // namespace

at::Tensor causalAttentionCpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              double scale, int64_t window) {
    TORCH_CHECK(q.is_cpu() && q.scalar_type() == at::kFloat && k.scalar_type() == at::kFloat &&
                    v.scalar_type() == at::kFloat,
                "causalAttentionCpu: float32 CPU tensors expected");
    const int64_t B = q.size(0), nh = q.size(1), T = q.size(2), d = q.size(3);
    const int64_t nkv = k.size(1);
    TORCH_CHECK(nkv > 0 && nh % nkv == 0 && k.size(2) == T && v.size(2) == T,
                "causalAttentionCpu: shapes do not match");
    const at::Tensor qq = q.stride(3) == 1 ? q : q.contiguous();
    const at::Tensor vv = v.stride(3) == 1 ? v : v.contiguous();
    // Keys transposed once per call ([B, nkv, d, T]) so one query's scores are read as rows.
    // Each row padded with 8 zeros, so the score loop's last vector of keys stays inside it.
    const int64_t ldk = T + 8;
    const at::Tensor kt = at::empty({B, nkv, d, ldk}, k.options());
    kt.narrow(3, 0, T).copy_(k.permute({0, 1, 3, 2}));
    kt.narrow(3, T, 8).zero_();
    at::Tensor out = at::empty({B, T, nh, d}, q.options());

    AttentionJob job{};
    job.q = qq.data_ptr<float>();
    job.qB = qq.stride(0), job.qH = qq.stride(1), job.qT = qq.stride(2);
    job.kt = kt.data_ptr<float>();
    job.ldk = ldk;
    job.v = vv.data_ptr<float>();
    job.vB = vv.stride(0), job.vH = vv.stride(1), job.vT = vv.stride(2);
    job.out = out.data_ptr<float>();
    job.B = B, job.nh = nh, job.nkv = nkv, job.T = T, job.d = d, job.window = window;
    // Units of 16 query rows: enough of them to share between threads even for one head.
    job.rowsPerUnit = 16;
    job.unitsPerHead = (T + job.rowsPerUnit - 1) / job.rowsPerUnit;
    job.scale = float(scale);
    at::parallel_for(0, B * nh * job.unitsPerHead, 1,
                     [&](int64_t begin, int64_t end) { attendUnits(job, begin, end); });
    return out.transpose(1, 2);
}

at::Tensor fusedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                double scale, int64_t window, const at::Tensor& mask) {
#if QS_TORCH_AT_LEAST(2, 1)
    // LibTorch's fused kernels (flash / memory-efficient on CUDA, flash on the CPU). Grouped KV
    // heads are expanded as transformers' repeat_kv does (enable_gqa is 2.5+ and not on every
    // backend).
    const int64_t groups = q.size(1) / k.size(1);
    const at::Tensor kk = groups > 1 ? k.repeat_interleave(groups, 1) : k;
    const at::Tensor vv = groups > 1 ? v.repeat_interleave(groups, 1) : v;
    if (window > 0)
        return at::scaled_dot_product_attention(q, kk, vv, mask, 0.0, /*is_causal=*/false, scale);
    return at::scaled_dot_product_attention(q, kk, vv, {}, 0.0, /*is_causal=*/true, scale);
#else
    (void)mask;
    if (q.is_cpu() && q.scalar_type() == at::kFloat)
        return causalAttentionCpu(q, k, v, scale, window);
    return at::Tensor();
#endif
}

} // namespace qs
