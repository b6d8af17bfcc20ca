#include "algo/Hadamard.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace qs::algo {

namespace {

// Bases tried for n = m * 2^k: large enough for every hidden size in use (the dense base stays
// small next to the fast transform of the power-of-two part).
constexpr int64_t kMaxBase = 1024;

bool isPrime(int64_t p) {
    if (p < 2)
        return false;
    for (int64_t d = 2; d * d <= p; ++d)
        if (p % d == 0)
            return false;
    return true;
}

// The odd prime p with q = p or q = p^2; 0 when q is neither (GF(q) is built only for those).
int64_t fieldPrime(int64_t q) {
    if (q % 2 == 0)
        return 0;
    if (isPrime(q))
        return q;
    const auto r = int64_t(std::llround(std::sqrt(double(q))));
    return r * r == q && isPrime(r) ? r : 0;
}

bool isPowerOfTwo(int64_t x) {
    return x > 0 && (x & (x - 1)) == 0;
}

// GF(q), q = p or p^2 (p odd prime): element a + b t encoded as a + p b, with t^2 = g for a
// quadratic non-residue g mod p (so x^2 - g is irreducible and the quotient ring is a field).
class SmallField {
public:
    explicit SmallField(int64_t q) : m_q(q), m_p(fieldPrime(q)) {
        if (m_q != m_p) {
            for (m_g = 2; m_g < m_p; ++m_g) {
                bool square = false;
                for (int64_t y = 1; y < m_p && !square; ++y)
                    square = (y * y) % m_p == m_g;
                if (!square)
                    break;
            }
        }
        m_isSquare.assign(size_t(m_q), false);
        for (int64_t y = 1; y < m_q; ++y)
            m_isSquare[size_t(mul(y, y))] = true;
    }

    int64_t sub(int64_t x, int64_t y) const {
        const int64_t a = ((x % m_p) - (y % m_p) + m_p) % m_p;
        const int64_t b = ((x / m_p) - (y / m_p) + m_p) % m_p;
        return a + m_p * b;
    }
    int64_t mul(int64_t x, int64_t y) const {
        const int64_t a = x % m_p, b = x / m_p, c = y % m_p, d = y / m_p;
        const int64_t re = (a * c + ((b * d) % m_p) * m_g) % m_p;
        const int64_t im = (a * d + b * c) % m_p;
        return re + m_p * im;
    }
    // The quadratic character: 0 at 0, 1 on nonzero squares, -1 elsewhere.
    int chi(int64_t x) const { return x == 0 ? 0 : (m_isSquare[size_t(x)] ? 1 : -1); }

private:
    int64_t m_q, m_p;
    int64_t m_g = 0;
    std::vector<bool> m_isSquare;
};

std::optional<HadamardBase> baseFor(int64_t m) {
    if (m == 1)
        return HadamardBase{1, 0, 0};
    const int64_t q1 = m - 1;
    if (fieldPrime(q1) && q1 % 4 == 3)
        return HadamardBase{m, q1, 1};
    if (m % 2 == 0) {
        const int64_t q2 = m / 2 - 1;
        if (fieldPrime(q2) && q2 % 4 == 1)
            return HadamardBase{m, q2, 2};
    }
    return std::nullopt;
}

at::Tensor sylvester(int64_t p) {
    at::Tensor h = at::ones({1, 1}, at::kLong);
    while (h.size(0) < p)
        h = at::cat({at::cat({h, h}, 1), at::cat({h, -h}, 1)}, 0);
    return h;
}

} // namespace

std::optional<HadamardBase> hadamardBase(int64_t n) {
    if (n < 1)
        return std::nullopt;
    for (int64_t m = 1; m <= std::min(n, kMaxBase); ++m)
        if (n % m == 0 && isPowerOfTwo(n / m))
            if (auto b = baseFor(m))
                return b;
    return std::nullopt;
}

at::Tensor paleyHadamard(const HadamardBase& base) {
    if (base.paley == 0)
        return at::ones({1, 1}, at::kLong);
    const int64_t q = base.q;
    const SmallField field(q);
    // Jacobsthal matrix Q_ij = chi(a_i - a_j): antisymmetric for q = 3 (mod 4), symmetric for
    // q = 1 (mod 4); Q Q^T = q I - J and Q J = J Q = 0.
    std::vector<int64_t> jac(size_t(q * q));
    for (int64_t i = 0; i < q; ++i)
        for (int64_t j = 0; j < q; ++j)
            jac[size_t(i * q + j)] = field.chi(field.sub(i, j));
    const int64_t c = q + 1;
    if (base.paley == 1) {
        // H = I + S with S = [[0, 1^T], [-1, Q]] skew-symmetric: H H^T = (q + 1) I.
        at::Tensor h = at::zeros({c, c}, at::kLong);
        auto a = h.accessor<int64_t, 2>();
        for (int64_t j = 1; j < c; ++j) {
            a[0][j] = 1;
            a[j][0] = -1;
        }
        for (int64_t i = 0; i < q; ++i)
            for (int64_t j = 0; j < q; ++j)
                a[i + 1][j + 1] = jac[size_t(i * q + j)];
        for (int64_t i = 0; i < c; ++i)
            a[i][i] += 1;
        return h;
    }
    // Paley II: the symmetric conference matrix C = [[0, 1^T], [1, Q]] (C C^T = q I), each
    // 0 replaced by [[1, -1], [-1, -1]] and each +-1 by +-[[1, 1], [1, -1]].
    std::vector<int64_t> conf(size_t(c * c), 0);
    for (int64_t j = 1; j < c; ++j)
        conf[size_t(j)] = conf[size_t(j * c)] = 1;
    for (int64_t i = 0; i < q; ++i)
        for (int64_t j = 0; j < q; ++j)
            conf[size_t((i + 1) * c + j + 1)] = jac[size_t(i * q + j)];
    at::Tensor h = at::empty({2 * c, 2 * c}, at::kLong);
    auto a = h.accessor<int64_t, 2>();
    for (int64_t i = 0; i < c; ++i)
        for (int64_t j = 0; j < c; ++j) {
            const int64_t v = conf[size_t(i * c + j)];
            const int64_t blk[2][2] = {{v == 0 ? 1 : v, v == 0 ? -1 : v},
                                       {v == 0 ? -1 : v, v == 0 ? -1 : -v}};
            for (int r = 0; r < 2; ++r)
                for (int s = 0; s < 2; ++s)
                    a[2 * i + r][2 * j + s] = blk[r][s];
        }
    return h;
}

at::Tensor hadamardMatrix(int64_t n) {
    const auto base = hadamardBase(n);
    if (!base)
        throw std::invalid_argument("no Hadamard construction for order " + std::to_string(n));
    return at::kron(paleyHadamard(*base), sylvester(n / base->order));
}

at::Tensor randomOrthogonal(int64_t n, uint64_t seed) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const at::Tensor g = at::normal(0.0, 1.0, {n, n}, gen, at::TensorOptions().dtype(at::kDouble));
    at::Tensor q, r;
    std::tie(q, r) = at::linalg_qr(g);
    // Unique factorisation: R with a positive diagonal (a zero diagonal has probability 0).
    return q * at::sign(r.diagonal()).unsqueeze(0);
}

OrthogonalRotation::OrthogonalRotation(int64_t n, int64_t blockSize, bool randomSigns,
                                       uint64_t seed)
    : m_n(n), m_block(blockSize > 0 ? blockSize : n), m_seed(seed) {
    if (n < 1 || m_block < 1 || n % m_block != 0)
        throw std::invalid_argument("rotation block " + std::to_string(m_block) +
                                    " does not divide " + std::to_string(n));
    if (const auto base = hadamardBase(m_block)) {
        m_isHadamard = true;
        m_base = *base;
        m_pow2 = m_block / base->order;
        m_baseMatrix = paleyHadamard(*base).to(at::kDouble);
    } else {
        m_baseMatrix = randomOrthogonal(m_block, seed);
    }
    if (randomSigns) {
        at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
        m_signs = at::randint(0, 2, {m_block}, gen, at::TensorOptions().dtype(at::kDouble)) * 2 - 1;
    }
}

std::string OrthogonalRotation::description() const {
    std::string d;
    if (m_block != m_n)
        d = "block-diagonal " + std::to_string(m_n / m_block) + "x ";
    if (!m_isHadamard)
        return d + "random orthogonal " + std::to_string(m_block) + " (seed " +
               std::to_string(m_seed) + ")";
    d += m_signs.defined() ? "random hadamard " : "hadamard ";
    d += m_base.order == 1 ? std::to_string(m_block)
                           : std::to_string(m_base.order) + "x" + std::to_string(m_pow2);
    if (m_signs.defined())
        d += " (seed " + std::to_string(m_seed) + ")";
    return d;
}

at::Tensor OrthogonalRotation::applyBlock(const at::Tensor& x, bool transpose) const {
    // Q = D B with D the random signs (identity without random_r1) and B the orthogonal block:
    // x Q = (x D) B, x Q^T = (x B^T) D.
    const at::Tensor signs = m_signs.defined() ? m_signs.to(x.device()) : at::Tensor();
    at::Tensor y = signs.defined() && !transpose ? x * signs : x;
    if (!m_isHadamard) {
        y = at::matmul(y,
                       transpose ? m_baseMatrix.t().to(x.device()) : m_baseMatrix.to(x.device()));
        return signs.defined() && transpose ? y * signs : y;
    }
    const int64_t m = m_base.order, p = m_pow2;
    // Index i = a p + b of H_m (x) H_p: the fast Walsh-Hadamard transform on b (each step pairs
    // the entries that differ in one bit: (u, v) -> (u + v, u - v); H_p is symmetric), then
    // H_m^T on a (H_m for the transpose).
    const auto lead = y.sizes().vec();
    const int64_t rows = y.numel() / m_block;
    y = y.reshape({rows, m, p});
    for (int64_t h = 1; h < p; h *= 2) {
        const at::Tensor v = y.reshape({rows, m, p / (2 * h), 2, h});
        const at::Tensor u0 = v.select(3, 0), u1 = v.select(3, 1);
        y = at::stack({u0 + u1, u0 - u1}, 3).reshape({rows, m, p});
    }
    if (m > 1)
        y = at::matmul(transpose ? m_baseMatrix.to(x.device()) : m_baseMatrix.t().to(x.device()),
                       y);
    y = (y / std::sqrt(double(m_block))).reshape(lead);
    return signs.defined() && transpose ? y * signs : y;
}

at::Tensor OrthogonalRotation::apply(const at::Tensor& x) const {
    return applyAll(x, false);
}

at::Tensor OrthogonalRotation::applyTranspose(const at::Tensor& x) const {
    return applyAll(x, true);
}

at::Tensor OrthogonalRotation::applyAll(const at::Tensor& x, bool transpose) const {
    if (x.size(-1) != m_n)
        throw std::invalid_argument("rotation of size " + std::to_string(m_n) +
                                    " applied to a last dimension of " +
                                    std::to_string(x.size(-1)));
    const at::Tensor xd = x.to(at::kDouble);
    if (m_block == m_n)
        return applyBlock(xd, transpose);
    auto shape = xd.sizes().vec();
    std::vector<int64_t> split(shape.begin(), shape.end() - 1);
    split.push_back(m_n / m_block);
    split.push_back(m_block);
    return applyBlock(xd.reshape(split), transpose).reshape(shape);
}

at::Tensor OrthogonalRotation::matrix() const {
    return apply(at::eye(m_n, at::TensorOptions().dtype(at::kDouble)));
}

} // namespace qs::algo
