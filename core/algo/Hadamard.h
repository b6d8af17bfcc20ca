// Hadamard matrices and the orthogonal rotations built from them (QuaRot / Quark's rotation).
//
// A Hadamard matrix H of order n has entries +-1 and H H^T = n I, so H / sqrt(n) is orthogonal
// and spreads every input channel evenly over all output channels: what makes a rotated
// residual stream free of outlier channels. Orders built here: n = m * 2^k where m = 1
// (Sylvester), m = q + 1 for a prime power q = 3 (mod 4) (Paley I) or m = 2(q + 1) for a prime
// power q = 1 (mod 4) (Paley II), with q a prime or the square of a prime. That covers the
// hidden sizes real models use: 12, 20, 28 (Paley II, q = 13), 36 (II, 17), 40 (= 20 * 2),
// 52 (II, q = 25 over GF(25)) and 60 (I, 59) times powers of two, e.g. 576 = 36 * 16.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>

namespace qs::algo {

// The Paley construction used for the base order m of a Hadamard matrix: q and which of the two
// constructions (1: order q + 1, 2: order 2(q + 1)); m = 1 is Sylvester's H_1 = [1].
struct HadamardBase {
    int64_t order = 1;
    int64_t q = 0;
    int paley = 0; // 0: m = 1, 1: Paley I, 2: Paley II
};

// How n factors into a constructible base order times a power of two (the smallest base that
// works); nullopt when this code has no construction for n.
std::optional<HadamardBase> hadamardBase(int64_t n);

// The base matrix of `base` as int64 entries +-1, [m, m].
at::Tensor paleyHadamard(const HadamardBase& base);

// The Hadamard matrix of order n (int64 entries +-1): base (x) Sylvester(2^k). Throws
// std::invalid_argument when hadamardBase(n) has none. Dense: for tests and small n; rotations
// apply the structured form (OrthogonalRotation).
at::Tensor hadamardMatrix(int64_t n);

// A seeded random orthogonal matrix of order n in float64: Q of the QR factorisation of a
// Gaussian matrix drawn from a CPU generator seeded with `seed`, columns signed so that R has a
// positive diagonal (the factorisation is then unique, so the matrix depends on the seed only).
at::Tensor randomOrthogonal(int64_t n, uint64_t seed);

// An orthogonal matrix Q of order n applied to the last dimension of tensors (x -> x Q) in
// float64: block-diagonal with blocks of `blockSize` (Quark's rotation_size; n when 0), each
// block H / sqrt(blockSize) for a constructible Hadamard order, optionally with random signs on
// its rows (Quark's random_r1: Q = D H / sqrt(n), D = diag(+-1) seeded), and a seeded random
// orthogonal block where no Hadamard matrix of that order is constructed here.
class OrthogonalRotation {
public:
    OrthogonalRotation(int64_t n, int64_t blockSize, bool randomSigns, uint64_t seed);

    int64_t size() const { return m_n; }
    bool isHadamard() const { return m_isHadamard; }
    // "hadamard 36x2^4", "random hadamard 64 (seed 0)", "random orthogonal 100 (seed 0)",
    // prefixed with "block-diagonal 4x" when blocks are smaller than n.
    std::string description() const;

    // x Q over the last dimension (size n), computed in float64 and returned in float64.
    // The Hadamard part runs as a fast Walsh-Hadamard transform plus a small dense base.
    at::Tensor apply(const at::Tensor& x) const;
    // x Q^T (the inverse: Q is orthogonal), the same way.
    at::Tensor applyTranspose(const at::Tensor& x) const;
    // The dense Q, [n, n] float64 (tests).
    at::Tensor matrix() const;

private:
    at::Tensor applyAll(const at::Tensor& x, bool transpose) const;
    at::Tensor applyBlock(const at::Tensor& x, bool transpose) const; // last dimension = m_block

    int64_t m_n;
    int64_t m_block;
    bool m_isHadamard = false;
    HadamardBase m_base;
    int64_t m_pow2 = 1;
    at::Tensor m_baseMatrix; // float64 [m, m] (Hadamard) or the random orthogonal block
    at::Tensor m_signs;      // float64 [block], random_r1 only
    uint64_t m_seed;
};

} // namespace qs::algo
