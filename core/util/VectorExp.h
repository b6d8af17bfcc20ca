// exp over 8 float lanes for the fused CPU loops (attention's softmax, the perplexity's
// log-sum-exp): GCC/Clang vector extensions, so each multiversioned caller compiles it for its
// own target (AVX2 + FMA or baseline SSE). ATen's vectorised exp is not usable from outside
// ATen's own per-CPU builds.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define QS_VEC_INLINE __attribute__((always_inline)) inline
#define QS_HAVE_VECTOR_EXP 1
#else
#define QS_VEC_INLINE inline
#define QS_HAVE_VECTOR_EXP 0
#endif

namespace qs::vec {

#if QS_HAVE_VECTOR_EXP
// Returning a 32-byte vector from a baseline-target function would change the ABI; these are
// always inlined into their callers, so there is no call whose ABI could differ.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Floats8 __attribute__((vector_size(32)));
typedef int32_t Ints8 __attribute__((vector_size(32)));

QS_VEC_INLINE Floats8 load8(const float* p) {
    Floats8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
QS_VEC_INLINE void store8(float* p, Floats8 v) {
    std::memcpy(p, &v, sizeof v);
}
QS_VEC_INLINE Floats8 splat8(float x) {
    return Floats8{} + x;
}

// exp(x) for x <= 0 (a value minus its row's maximum): Cephes' expf reduction and polynomial,
// within about 1 ulp of the correctly rounded result. Below -87 it returns e^-87 ~ 1.6e-38,
// nothing next to the row maximum's term of 1.
QS_VEC_INLINE Floats8 expNonPositive(Floats8 x) {
    x = x < splat8(-87.0f) ? splat8(-87.0f) : x;
    // n = x * log2(e) rounded to the nearest integer: adding 1.5 * 2^23 leaves no fraction bits.
    const Floats8 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    Floats8 r = x - n * 0.693359375f; // ln 2 in two parts, the first exact in n * C1
    r = r - n * -2.12194440e-4f;
    Floats8 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const Ints8 bits = (__builtin_convertvector(n, Ints8) + 127) << 23; // 2^n, n >= -126
    Floats8 pow2;
    std::memcpy(&pow2, &bits, sizeof pow2);
    return p * pow2;
}

QS_VEC_INLINE float expNonPositive(float x) {
    return expNonPositive(splat8(x))[0];
}
#else
inline float expNonPositive(float x) {
    return std::exp(x < -87.0f ? -87.0f : x);
}
#endif

} // namespace qs::vec

// GCC builds an x86-64-v3 (AVX2 + FMA) copy and a baseline one of a hot loop and picks by the
// CPU's features at load time ("arch=haswell" would pick by CPU model: never on AMD).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define QS_VEC_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define QS_VEC_MULTIVERSION
#endif
