// Small helpers shared by the quantization tests (header only; not a test itself).
#pragma once

#include "quant/QuantSpec.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace qs::quant::test {

inline std::vector<float> values(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kFloat).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

inline at::Tensor tensorOf(const std::vector<float>& v, std::vector<int64_t> shape) {
    return at::tensor(v, at::kFloat).reshape(shape).clone();
}

inline uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Bit equality, treating every NaN as equal to every NaN.
inline bool sameFloat(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b);
}

// Index of the first element that differs (as sameFloat), or -1.
inline int64_t firstDifference(const at::Tensor& a, const at::Tensor& b) {
    const auto va = values(a), vb = values(b);
    if (va.size() != vb.size())
        return 0;
    for (size_t i = 0; i < va.size(); ++i)
        if (!sameFloat(va[i], vb[i]))
            return static_cast<int64_t>(i);
    return -1;
}

// Round-to-nearest-even float32 -> bfloat16 -> float32, written from the bfloat16 definition
// (keep the top 16 bits of the fp32 pattern) for references that emulate bf16 arithmetic.
inline float roundBf16(float x) {
    if (std::isnan(x))
        return x;
    uint32_t u = bitsOf(x);
    const uint32_t lsb = (u >> 16) & 1u;
    u += 0x7FFFu + lsb;
    u &= 0xFFFF0000u;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
}

// Deterministic weight-like data: mostly normal, a few larger outliers.
inline at::Tensor randomWeights(std::vector<int64_t> shape, uint32_t seed, float outlierScale = 8) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 0.05f);
    std::uniform_int_distribution<int> pick(0, 97);
    int64_t count = 1;
    for (int64_t s : shape)
        count *= s;
    std::vector<float> v(static_cast<size_t>(count));
    for (auto& x : v)
        x = n(rng) * (pick(rng) == 0 ? outlierScale : 1.0f);
    return tensorOf(v, shape);
}

// An integer spec of the given layout: per-group and per-token along the last axis, per-channel
// on axis 0; per-token specs are dynamic (as Quark's), the others static.
inline QuantSpec intSpec(DataType d, Granularity g, bool sym, int groupSize = 0) {
    QuantSpec s = QuantSpec::defaults(d);
    s.granularity = g;
    s.symmetric = sym;
    s.chAxis = g == Granularity::PerGroup ? -1 : 0;
    s.groupSize = g == Granularity::PerGroup ? groupSize : 0;
    s.isDynamic = g == Granularity::PerToken;
    return s;
}

inline const DataType kIntTypes[] = {DataType::Int2,  DataType::Int3, DataType::Int4,
                                     DataType::Uint4, DataType::Int8, DataType::Uint8};

} // namespace qs::quant::test
