// FP8/FP6/FP4, MX, NVFP4, MX6, BFP16 and cast quantization of tensors against plain references:
// scales from the formulas in Quark's observers, element values from the brute-force OCP
// reference in MiniFloatReference.h.
#include "MiniFloatReference.h"
#include "QuantTestHelpers.h"
#include "TestMain.h"

#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <QtTest>

#include <cfloat>
#include <limits>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

const RefFormat& refFormatOf(DataType element) {
    switch (element) {
    case DataType::Fp8E4M3:
        return kRefE4M3;
    case DataType::Fp8E5M2:
        return kRefE5M2;
    case DataType::Fp6E3M2:
        return kRefE3M2;
    case DataType::Fp6E2M3:
        return kRefE2M3;
    default:
        return kRefE2M1;
    }
}

// Groups of `len` consecutive elements of a row-major [rows, cols] tensor, zero-padding the
// last group of each row (Quark reshape_to_blocks).
template <typename F> void forGroups(const std::vector<float>& x, int64_t cols, int64_t len, F f) {
    const int64_t rows = int64_t(x.size()) / cols;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t start = 0; start < cols; start += len)
            f(r * cols + start, std::min(len, cols - start));
}

float groupAmax(const std::vector<float>& x, int64_t begin, int64_t n) {
    float a = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(x[begin + i]))
            return x[begin + i];
        a = std::max(a, std::fabs(x[begin + i]));
    }
    return a;
}

QuantSpec spec(DataType d, Granularity g = Granularity::PerGroup, int group = 0) {
    QuantSpec s = QuantSpec::defaults(d);
    if (traits(d).encoding == Encoding::Float) {
        s.granularity = g;
        s.chAxis = g == Granularity::PerGroup ? -1 : 0;
        s.groupSize = g == Granularity::PerGroup ? group : 0;
        s.isDynamic = g == Granularity::PerToken;
    }
    return s;
}

at::Tensor sample(int64_t rows, int64_t cols, uint32_t seed) {
    return randomWeights({rows, cols}, seed, 30.0f) * 40.0f;
}

} // namespace

class TestQuantFloat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fp8PerTensorChannelToken() {
        const at::Tensor x = sample(6, 40, 1);
        const auto xv = values(x);
        for (DataType d : {DataType::Fp8E4M3, DataType::Fp8E5M2}) {
            const float fmax = float(traits(d).floatMax);
            for (Granularity g :
                 {Granularity::PerTensor, Granularity::PerChannel, Granularity::PerToken}) {
                const QuantSpec s = spec(d, g);
                const int64_t len = g == Granularity::PerTensor ? 240 : 40;
                std::vector<float> ref(xv.size());
                for (int64_t b = 0; b < 240; b += len) {
                    float scale = groupAmax(xv, b, len) / fmax;
                    if (scale == 0)
                        scale = FLT_EPSILON;
                    for (int64_t i = b; i < b + len; ++i)
                        ref[i] = refFp8(xv[i] / scale, refFormatOf(d)) * scale;
                }
                const at::Tensor got = fakeQuantize(x, s);
                QVERIFY2(firstDifference(got, tensorOf(ref, {6, 40})) < 0, s.summary().c_str());
                const QuantizedTensor q = quantize(x, s);
                QCOMPARE(q.codes.scalar_type(), at::kByte);
                QVERIFY(firstDifference(dequantize(q, s), got) < 0);
            }
        }
    }

    void perGroupFloatScales() {
        // [3, 40] with groups of 16: the third group of each row is zero padded.
        const at::Tensor x = sample(3, 40, 2);
        const auto xv = values(x);
        for (DataType d : {DataType::Fp8E4M3, DataType::Fp8E5M2, DataType::Fp6E3M2,
                           DataType::Fp6E2M3, DataType::Fp4}) {
            const QuantSpec s = spec(d, Granularity::PerGroup, 16);
            const float fmax = float(traits(d).floatMax);
            std::vector<float> ref(xv.size());
            forGroups(xv, 40, 16, [&](int64_t b, int64_t n) {
                float scale = groupAmax(xv, b, n) / fmax;
                if (scale == 0)
                    scale = FLT_EPSILON;
                for (int64_t i = b; i < b + n; ++i) {
                    const float y = xv[i] / scale;
                    ref[i] =
                        (isFp8(d) ? refFp8(y, refFormatOf(d)) : refElement(y, refFormatOf(d))) *
                        scale;
                }
            });
            const at::Tensor got = fakeQuantize(x, s);
            QCOMPARE(paramShape(x, s), (std::vector<int64_t>{3, 3}));
            QVERIFY2(firstDifference(got, tensorOf(ref, {3, 40})) < 0, s.summary().c_str());
            QVERIFY(firstDifference(dequantize(quantize(x, s), s), got) < 0);
        }
    }

    void mxAllTypes() {
        const at::Tensor x = sample(4, 80, 3); // 80 = 32 + 32 + 16 (padded block)
        const auto xv = values(x);
        for (DataType d : {DataType::MxFp4, DataType::MxFp6E3M2, DataType::MxFp6E2M3,
                           DataType::MxFp8E4M3, DataType::MxFp8E5M2, DataType::MxInt8}) {
            const TypeTraits& t = traits(d);
            const TypeTraits& e = traits(t.element);
            const QuantSpec s = QuantSpec::defaults(d);
            std::vector<float> ref(xv.size());
            std::vector<unsigned> refCodes;
            forGroups(xv, 80, 32, [&](int64_t b, int64_t n) {
                const float scale = refEvenScale(groupAmax(xv, b, n), e.mbits, e.emax);
                refCodes.push_back(unsigned(std::log2(scale) + 127));
                for (int64_t i = b; i < b + n; ++i) {
                    if (d == DataType::MxInt8) {
                        const float s64 = std::max(scale / 64, FLT_MIN);
                        const float q = std::clamp(std::nearbyint(xv[i] * (1.0f / s64)) + 0.0f,
                                                   -127.0f, 127.0f);
                        ref[i] = q * s64;
                    } else {
                        const float y = xv[i] / scale;
                        ref[i] = (isFp8(t.element) ? refFp8(y, refFormatOf(t.element))
                                                   : refElement(y, refFormatOf(t.element))) *
                                 scale;
                    }
                }
            });
            const QuantParams p = computeParams(s, observeRange(x, s));
            QCOMPARE(p.scaleCodes.scalar_type(), at::kByte);
            const at::Tensor codes = p.scaleCodes.reshape({-1}).to(at::kInt);
            for (size_t i = 0; i < refCodes.size(); ++i)
                QCOMPARE(unsigned(codes[int64_t(i)].item<int>()), refCodes[i]);
            const at::Tensor got = fakeQuantize(x, s, p);
            QVERIFY2(firstDifference(got, tensorOf(ref, {4, 80})) < 0, s.summary().c_str());
            QVERIFY(firstDifference(fakeQuantize(x, s), got) < 0);
            QVERIFY(firstDifference(dequantize(quantize(x, s, p), s), got) < 0);
        }
    }

    void mxHandWorked() {
        // Block of 32 with amax 6: scale 2^(2-2) = 1, elements are FP4 roundings of themselves.
        std::vector<float> v(32, 0.0f);
        const float in[] = {6.0f, 5.0f, 2.5f, 0.25f, -0.75f, 1.25f, -6.0f, 3.5f};
        std::copy(std::begin(in), std::end(in), v.begin());
        at::Tensor x = tensorOf(v, {1, 32});
        const QuantSpec s = QuantSpec::defaults(DataType::MxFp4);
        QuantParams p = computeParams(s, observeRange(x, s));
        QCOMPARE(p.scale.item<float>(), 1.0f);
        QCOMPARE(int(p.scaleCodes.item<uint8_t>()), 127);
        const auto out = values(fakeQuantize(x, s, p));
        const float expected[] = {6.0f, 4.0f, 2.0f, 0.0f, -1.0f, 1.0f, -6.0f, 4.0f};
        for (int i = 0; i < 8; ++i)
            QCOMPARE(out[i], expected[i]);
        // amax 7 = 1.75 * 4 rounds the shared exponent up: scale 2, and 7/2 = 3.5 -> 4 -> 8.
        v[0] = 7.0f;
        x = tensorOf(v, {1, 32});
        p = computeParams(s, observeRange(x, s));
        QCOMPARE(p.scale.item<float>(), 2.0f);
        QCOMPARE(values(fakeQuantize(x, s, p))[0], 8.0f);
        // An all-zero block: scale 2^-127 (E8M0 code 0), output zeros.
        const at::Tensor z = at::zeros({1, 32});
        p = computeParams(s, observeRange(z, s));
        QCOMPARE(int(p.scaleCodes.item<uint8_t>()), 0);
        QVERIFY(at::equal(fakeQuantize(z, s, p), z));
    }

    void mxNonFinite() {
        std::vector<float> v(64, 0.5f);
        v[1] = std::numeric_limits<float>::quiet_NaN();
        v[40] = std::numeric_limits<float>::infinity();
        const at::Tensor x = tensorOf(v, {1, 64});
        const QuantSpec s = QuantSpec::defaults(DataType::MxFp4);
        const QuantParams p = computeParams(s, observeRange(x, s));
        QCOMPARE(int(p.scaleCodes.reshape({-1})[0].item<uint8_t>()), 0xFF); // NaN scale
        QCOMPARE(p.scale.reshape({-1})[1].item<float>(), std::ldexp(1.0f, 127));
        const auto out = values(fakeQuantize(x, s, p));
        for (int i = 0; i < 32; ++i)
            QVERIFY(std::isnan(out[i]));
        for (int i = 32; i < 64; ++i)
            QCOMPARE(out[i], i == 40 ? std::numeric_limits<float>::infinity() : 0.0f);
    }

    void nvfp4() {
        at::Tensor x = sample(4, 48, 4);
        x[2].narrow(0, 16, 16).fill_(1e-6f); // a group far below the tensor max
        x[3].narrow(0, 0, 16).zero_();
        const auto xv = values(x);
        float gmax = 0;
        for (float v : xv)
            gmax = std::max(gmax, std::fabs(v));
        const float s2 = gmax / 2688.0f;
        std::vector<float> ref(xv.size());
        std::vector<unsigned> refScaleCodes;
        forGroups(xv, 48, 16, [&](int64_t b, int64_t n) {
            float s1 = groupAmax(xv, b, n) / 6.0f;
            if (s1 == 0)
                s1 = FLT_EPSILON;
            const float r = refFp8(s1 / s2, kRefE4M3);
            refScaleCodes.push_back(refCode(r, kRefE4M3));
            const float s1q = r * s2;
            for (int64_t i = b; i < b + n; ++i)
                ref[i] = refElement(xv[i] / (s1q == 0 ? FLT_EPSILON : s1q), kRefE2M1) * s1q;
        });
        const QuantSpec s = QuantSpec::defaults(DataType::NvFp4);
        const QuantParams p = computeParams(s, observeRange(x, s));
        QCOMPARE(p.globalScale.item<float>(), s2);
        const at::Tensor codes = p.scaleCodes.reshape({-1}).to(at::kInt);
        for (size_t i = 0; i < refScaleCodes.size(); ++i)
            QCOMPARE(unsigned(codes[int64_t(i)].item<int>()), refScaleCodes[i]);
        const at::Tensor got = fakeQuantize(x, s, p);
        QVERIFY(firstDifference(got, tensorOf(ref, {4, 48})) < 0);
        QVERIFY(firstDifference(dequantize(quantize(x, s, p), s), got) < 0);
        // The tiny group's FP8 scale underflows to zero: it comes back as zeros.
        QCOMPARE(values(got)[2 * 48 + 20], 0.0f);
        // A given (static) global amax overrides the tensor's own.
        Range r = observeRange(x, s);
        r.globalAmax = at::scalar_tensor(2 * gmax);
        QCOMPARE(computeParams(s, r).globalScale.item<float>(), (2 * gmax) / 2688.0f);
    }

    void mx6AndBfp16() {
        const at::Tensor x = sample(2, 64, 5);
        const auto xv = values(x);
        // MX6 (Quark fake_quantize_mx6_mx9, quant_bit 5): exponent of the block max, one less for
        // a pair whose two exponents are both below it; scale 2^(e - 3); clamp to the block range.
        auto expOf = [](float v) {
            if (v == 0 || !std::isfinite(v))
                return -127;
            int e;
            std::frexp(v, &e);
            return std::max(e - 1, -127);
        };
        std::vector<float> mx6(xv.size());
        forGroups(xv, 64, 32, [&](int64_t b, int64_t n) {
            const int me = expOf(groupAmax(xv, b, n));
            for (int64_t i = b; i < b + n; i += 2) {
                const bool low = me - expOf(xv[i]) >= 1 && me - expOf(xv[i + 1]) >= 1;
                const float scale = std::ldexp(1.0f, me - (low ? 1 : 0) - 3);
                const float qmax = float(std::ldexp(1.0, me + 1) - scale) / scale;
                for (int64_t k = i; k < i + 2; ++k)
                    mx6[k] = std::clamp(std::nearbyint(xv[k] / scale), -qmax, qmax) * scale;
            }
        });
        QVERIFY(firstDifference(fakeQuantize(x, QuantSpec::defaults(DataType::Mx6)),
                                tensorOf(mx6, {2, 64})) < 0);
        // BFP16: 8 int8 mantissas with scale 2^(floor(log2 amax) - 6), one binade more when a
        // mantissa would round past [-128, 127].
        std::vector<float> bfp(xv.size());
        forGroups(xv, 64, 8, [&](int64_t b, int64_t n) {
            float amax = groupAmax(xv, b, n);
            auto scaleOf = [&](float a) {
                return a == 0 ? FLT_EPSILON : std::ldexp(1.0f, expOf(a) - 6);
            };
            bool over = false;
            for (int64_t i = b; i < b + n; ++i) {
                const float q = std::nearbyint(xv[i] / scaleOf(amax));
                over = over || q >= 128 || q < -128;
            }
            const float s = scaleOf(over ? 2 * amax : amax);
            for (int64_t i = b; i < b + n; ++i)
                bfp[i] = std::clamp(std::nearbyint(xv[i] * (1.0f / s)), -128.0f, 127.0f) * s;
        });
        QVERIFY(firstDifference(fakeQuantize(x, QuantSpec::defaults(DataType::Bfp16)),
                                tensorOf(bfp, {2, 64})) < 0);
        // Hand-worked BFP16: amax 1.0 -> scale 2^-6, 0.5 -> 32/64; 127.5/64 stays in range.
        std::vector<float> h(8, 0.0f);
        h[0] = 1.0f;
        h[1] = 0.5f;
        h[2] = -1.0f;
        const auto hb =
            values(fakeQuantize(tensorOf(h, {1, 8}), QuantSpec::defaults(DataType::Bfp16)));
        QCOMPARE(hb[0], 1.0f);
        QCOMPARE(hb[1], 0.5f);
        QCOMPARE(hb[2], -1.0f);
        QVERIFY_THROWS_EXCEPTION(qs::Error, quantize(x, QuantSpec::defaults(DataType::Mx6)));
    }

    void casts() {
        const float tieBf16 = 1.0f + std::ldexp(1.0f, -8); // halfway between 1 and 1 + 2^-7
        const at::Tensor x =
            tensorOf({tieBf16, 1.0f + 3 * std::ldexp(1.0f, -8), 70000.0f, 0.1f}, {4});
        const auto bf = values(fakeQuantize(x, QuantSpec::defaults(DataType::BFloat16)));
        for (int i = 0; i < 4; ++i)
            QCOMPARE(bf[i], roundBf16(values(x)[i]));
        QCOMPARE(bf[0], 1.0f);
        const auto h = values(fakeQuantize(x, QuantSpec::defaults(DataType::Float16)));
        QCOMPARE(h[0], 1.0f + std::ldexp(1.0f, -8)); // exactly representable in fp16
        QVERIFY(std::isinf(h[2]));                   // beyond 65504
        QCOMPARE(h[3], 0.0999755859375f);            // nearest fp16 to 0.1
    }

    void bf16InputsFp8PerTensor() {
        // Quark divides and multiplies in the model dtype for FP8 per tensor.
        const at::Tensor x = sample(4, 32, 8).to(at::kBFloat16);
        const auto xv = values(x);
        const QuantSpec s = spec(DataType::Fp8E4M3, Granularity::PerTensor);
        const float scale = roundBf16(groupAmax(xv, 0, 128) / 448.0f);
        const QuantParams p = computeParams(s, observeRange(x, s));
        QCOMPARE(p.scale.scalar_type(), at::kBFloat16);
        QCOMPARE(p.scale.to(at::kFloat).item<float>(), scale);
        const auto got = values(fakeQuantize(x, s, p));
        for (size_t i = 0; i < xv.size(); ++i) {
            const float ref = roundBf16(refFp8(roundBf16(xv[i] / scale), kRefE4M3) * scale);
            QVERIFY(sameFloat(got[i], ref));
        }
    }

    void progressiveInt4Fp8() {
        // int4_fp8 weights: FP8 per tensor (s1 = amax / 448), then INT4 per channel on the FP8
        // grid values, then times s1.
        const QuantScheme sch = resolveScheme("int4_fp8");
        const at::Tensor x = sample(4, 64, 9);
        const auto xv = values(x);
        float amax = 0;
        for (float v : xv)
            amax = std::max(amax, std::fabs(v));
        const float s1 = amax / 448.0f;
        std::vector<float> ref(xv.size());
        for (int r = 0; r < 4; ++r) {
            std::vector<float> grid(64);
            float mn = 0, mx = 0;
            for (int i = 0; i < 64; ++i) {
                grid[i] = refFp8(xv[r * 64 + i] / s1, kRefE4M3);
                mn = std::min(mn, grid[i]);
                mx = std::max(mx, grid[i]);
            }
            const float s = std::max(std::max(-mn, mx) / 7.5f, FLT_EPSILON);
            for (int i = 0; i < 64; ++i) {
                // + zp (0) as Quark adds the zero point before clamping: -0 becomes +0.
                const float q =
                    std::clamp(std::nearbyint(grid[i] * (1.0f / s)) + 0.0f, -8.0f, 7.0f);
                ref[r * 64 + i] = (q * s) * s1;
            }
        }
        const at::Tensor got = fakeQuantizeProgressive(x, *sch.weightPreStage, sch.weight);
        const int64_t diff = firstDifference(got, tensorOf(ref, {4, 64}));
        if (diff >= 0)
            qWarning("first difference at %lld: got %.9g ref %.9g x %.9g", (long long)diff,
                     double(values(got)[diff]), double(ref[diff]), double(xv[diff]));
        QCOMPARE(diff, int64_t(-1));
        QVERIFY_THROWS_EXCEPTION(
            qs::Error,
            fakeQuantizeProgressive(x, QuantSpec::defaults(DataType::MxFp4), sch.weight));
    }

    void nonFiniteFp8() {
        const at::Tensor x =
            tensorOf({1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 3.0f}, {2, 2});
        const QuantSpec s = spec(DataType::Fp8E4M3, Granularity::PerChannel);
        const auto out = values(fakeQuantize(x, s));
        QVERIFY(std::isnan(out[0]) && std::isnan(out[1])); // NaN poisons its channel's scale
        QVERIFY(std::isfinite(out[2]) && std::isfinite(out[3]));
        const at::Tensor zero = at::zeros({2, 2});
        QVERIFY(at::equal(fakeQuantize(zero, s), zero));
    }
};

QS_TEST_APPLESS_MAIN(TestQuantFloat)
#include "tst_quant_float.moc"
