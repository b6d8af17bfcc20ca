// Integer quantization against a plain scalar reference of Quark's formulas (float32 arithmetic,
// as Quark's observers and torch.fake_quantize_* compute it): symmetric s = amax / ((qmax-qmin)/2),
// asymmetric s = (max - min) / (qmax - qmin) with 0 folded into the range, s = max(s, eps32),
// zp = clamp(qmin - round(min / s)), q = clamp(round(x * (1/s)) + zp), x^ = (q - zp) * s.
#include "QuantTestHelpers.h"
#include "TestMain.h"

#include "quant/FastGroupQuant.h"
#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/Parallel.h>
#include <QtTest>

#include <cfloat>
#include <limits>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

struct RefParams {
    float scale;
    int zp;
};

RefParams refParams(float mn, float mx, double qmin, double qmax, bool sym) {
    const float minNeg = std::min(mn, 0.0f);
    const float maxPos = std::max(mx, 0.0f);
    if (sym) {
        const float s = std::max(std::max(-minNeg, maxPos) / float((qmax - qmin) / 2), FLT_EPSILON);
        return {s, 0};
    }
    const float s = std::max((maxPos - minNeg) / float(qmax - qmin), FLT_EPSILON);
    int zp = int(qmin) - int(std::nearbyint(minNeg / s));
    zp = std::clamp(zp, int(qmin), int(qmax));
    return {s, zp};
}

float refFake(float x, RefParams p, double qmin, double qmax) {
    const float inv = 1.0f / p.scale;
    const float q = std::clamp(std::nearbyint(x * inv) + float(p.zp), float(qmin), float(qmax));
    return (q - float(p.zp)) * p.scale;
}

// Reference fake quantization of a 2-D [rows, cols] tensor; groups are runs of `len` elements
// of a row (len = cols: per channel/token; rows*cols: per tensor).
std::vector<float> refFake2d(const std::vector<float>& x, int64_t len, double qmin, double qmax,
                             bool sym, std::vector<RefParams>* params = nullptr) {
    std::vector<float> out(x.size());
    for (size_t g = 0; g < x.size() / size_t(len); ++g) {
        float mn = x[g * len], mx = x[g * len];
        for (int64_t i = 0; i < len; ++i) {
            mn = std::min(mn, x[g * len + i]);
            mx = std::max(mx, x[g * len + i]);
        }
        const RefParams p = refParams(mn, mx, qmin, qmax, sym);
        if (params)
            params->push_back(p);
        for (int64_t i = 0; i < len; ++i)
            out[g * len + i] = refFake(x[g * len + i], p, qmin, qmax);
    }
    return out;
}

} // namespace

class TestQuantInt : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { at::set_num_threads(2); }

    void everyTypeAndGranularityMatchesReference() {
        const at::Tensor x = randomWeights({8, 64}, 11);
        const auto xv = values(x);
        struct G {
            Granularity g;
            int group;
            int64_t len;
        };
        const G grans[] = {{Granularity::PerTensor, 0, 8 * 64},
                           {Granularity::PerChannel, 0, 64},
                           {Granularity::PerToken, 0, 64},
                           {Granularity::PerGroup, 16, 16},
                           {Granularity::PerGroup, 32, 32}};
        for (DataType d : kIntTypes) {
            const TypeTraits& t = traits(d);
            for (const G& g : grans) {
                for (bool sym : {true, false}) {
                    const QuantSpec spec = intSpec(d, g.g, sym, g.group);
                    const QString what = QString::fromStdString(spec.summary());
                    std::vector<RefParams> rp;
                    const auto ref = refFake2d(xv, g.len, t.qmin, t.qmax, sym, &rp);
                    const QuantParams p = computeParams(spec, observeRange(x, spec));
                    const at::Tensor generic = fakeQuantize(x, spec, p);
                    QVERIFY2(firstDifference(generic, tensorOf(ref, {8, 64})) < 0,
                             qPrintable(what));
                    const at::Tensor dynamic = fakeQuantize(x, spec);
                    QVERIFY2(firstDifference(dynamic, generic) < 0, qPrintable(what));
                    // Parameters and codes.
                    const auto scales = values(p.scale);
                    const at::Tensor zps = p.zeroPoint.to(at::kInt).contiguous();
                    QCOMPARE(scales.size(), rp.size());
                    for (size_t i = 0; i < rp.size(); ++i) {
                        QVERIFY2(sameFloat(scales[i], rp[i].scale), qPrintable(what));
                        QCOMPARE(zps.data_ptr<int32_t>()[i], rp[i].zp);
                    }
                    const QuantizedTensor q = quantize(x, spec, p);
                    QCOMPARE(q.codes.scalar_type(), at::kInt);
                    QVERIFY(q.codes.min().item<int>() >= t.qmin);
                    QVERIFY(q.codes.max().item<int>() <= t.qmax);
                    QVERIFY2(firstDifference(dequantize(q, spec), generic) < 0, qPrintable(what));
                }
            }
        }
    }

    void tiesRoundHalfToEven() {
        // int8 symmetric per tensor with amax 127.5 gives s = 1 exactly.
        const at::Tensor x = tensorOf({0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, 126.5f, 127.5f}, {8});
        const QuantSpec spec = intSpec(DataType::Int8, Granularity::PerTensor, true);
        const QuantParams p = computeParams(spec, observeRange(x, spec));
        QCOMPARE(p.scale.item<float>(), 1.0f);
        const auto out = values(fakeQuantize(x, spec, p));
        const std::vector<float> expected{0, 2, 2, 0, -2, 4, 126, 127}; // 127.5 -> 128 -> clamp
        QCOMPARE(out, expected);
        const at::Tensor codes = quantize(x, spec, p).codes;
        QCOMPARE(codes[7].item<int>(), 127);
        QCOMPARE(codes[6].item<int>(), 126);
    }

    void saturationWithGivenParams() {
        const at::Tensor x = tensorOf({10.0f, -10.0f, 0.1f, 0.0f}, {4});
        QuantSpec spec = intSpec(DataType::Uint4, Granularity::PerTensor, false);
        QuantParams p;
        p.scale = at::scalar_tensor(0.5f, at::kFloat);
        p.zeroPoint = at::scalar_tensor(3, at::kInt);
        const auto out = values(fakeQuantize(x, spec, p));
        // 10/0.5 + 3 = 23 -> 15 -> (15-3)*0.5 = 6; -10 -> 0 -> -1.5; 0.1/0.5 = 0.2 -> 0 -> 0.
        QCOMPARE(out, (std::vector<float>{6.0f, -1.5f, 0.0f, 0.0f}));
        const auto codes = quantize(x, spec, p).codes;
        QCOMPARE(codes[0].item<int>(), 15);
        QCOMPARE(codes[1].item<int>(), 0);
        QCOMPARE(codes[2].item<int>(), 3);
    }

    void zeroAndConstantTensors() {
        for (DataType d : kIntTypes) {
            for (bool sym : {true, false}) {
                const QuantSpec spec = intSpec(d, Granularity::PerGroup, sym, 8);
                const at::Tensor zeros = at::zeros({2, 16});
                const QuantParams p = computeParams(spec, observeRange(zeros, spec));
                for (float s : values(p.scale))
                    QCOMPARE(s, FLT_EPSILON); // max(0, eps)
                QVERIFY(at::equal(fakeQuantize(zeros, spec), zeros));
                // A constant row: the reference formula, and close to the constant.
                for (float c : {0.3f, -0.3f, 7.0f}) {
                    const at::Tensor x = at::full({2, 16}, c);
                    const TypeTraits& t = traits(d);
                    const auto ref = refFake2d(values(x), 8, t.qmin, t.qmax, sym);
                    const at::Tensor got = fakeQuantize(x, spec);
                    QVERIFY(firstDifference(got, tensorOf(ref, {2, 16})) < 0);
                    if (sym && t.qmin < 0) // symmetric signed: |x^| within one step of |c|
                        QVERIFY(std::fabs(values(got)[0] - c) <=
                                std::fabs(c) / float(-t.qmin) + 1e-6f);
                }
            }
        }
        // Hand-worked: 0.3 int8 symmetric -> s = 0.3/127.5, 0.3/s = 127.5 (or one ulp off),
        // rounds/clamps to 127, x^ = 127 s.
        const at::Tensor x = at::full({4}, 0.3f);
        const QuantSpec spec = intSpec(DataType::Int8, Granularity::PerTensor, true);
        const float s = 0.3f / 127.5f;
        QCOMPARE(values(fakeQuantize(x, spec))[0], 127.0f * s);
    }

    // A per-tensor range (the static activation observers' case) is the first minimum and the
    // first maximum in the tensor's order, NaN poisoning both (a plain scan with strict
    // comparisons, as ATen's row loop and Quark's torch.aminmax give them). The fast path takes
    // a threaded all-reduce, which may return +0 for a first extreme of -0: checked with a -0
    // minimum before a +0 one, and the reverse, at both ends of a tensor long enough to be split
    // over threads.
    void perTensorRangeIsTheFirstExtreme() {
        const QuantSpec spec = intSpec(DataType::Int8, Granularity::PerTensor, false);
        const int64_t n = int64_t(1) << 20;
        auto scan = [](const std::vector<float>& v) {
            float mn = v[0], mx = v[0];
            for (const float x : v) {
                if (std::isnan(x))
                    return std::pair<float, float>(x, x);
                if (x < mn)
                    mn = x;
                if (x > mx)
                    mx = x;
            }
            return std::pair<float, float>(mn, mx);
        };
        for (int pattern = 0; pattern < 6; ++pattern) {
            std::vector<float> v = values(at::rand({n}) + 1.0f); // all in [1, 2)
            if (pattern == 1) { // -0 first, +0 later: the minimum is -0
                v[3] = -0.0f;
                v[n - 5] = 0.0f;
            } else if (pattern == 2) { // +0 first: +0
                v[3] = 0.0f;
                v[n - 5] = -0.0f;
            } else if (pattern == 3) { // all negative: the maximum is a zero, -0 first
                for (float& x : v)
                    x = -x;
                v[n / 2] = -0.0f;
                v[n - 1] = 0.0f;
            } else if (pattern == 4) {
                v[n / 3] = std::numeric_limits<float>::quiet_NaN();
            } else if (pattern == 5) {
                v[7] = -3.5f; // an ordinary extreme on each side, away from zero
                v[n - 9] = 9.25f;
            }
            const Range r = observeRange(tensorOf(v, {4, n / 4}), spec);
            const auto [mn, mx] = scan(v);
            const float gotMin = values(r.min)[0], gotMax = values(r.max)[0];
            QVERIFY2(sameFloat(gotMin, mn) && sameFloat(gotMax, mx),
                     qPrintable(QString("pattern %1: range bits %2 %3, expected %4 %5")
                                    .arg(pattern)
                                    .arg(bitsOf(gotMin), 8, 16, QChar('0'))
                                    .arg(bitsOf(gotMax), 8, 16, QChar('0'))
                                    .arg(bitsOf(mn), 8, 16, QChar('0'))
                                    .arg(bitsOf(mx), 8, 16, QChar('0'))));
        }
    }

    void nanAndInfPoisonOnlyTheirGroup() {
        std::vector<float> v(32, 0.25f);
        for (int i = 0; i < 32; ++i)
            v[i] = 0.01f * float(i - 16);
        v[3] = std::numeric_limits<float>::quiet_NaN();
        v[20] = std::numeric_limits<float>::infinity();
        const at::Tensor x = tensorOf(v, {1, 32});
        for (DataType d : {DataType::Int4, DataType::Uint8}) {
            for (bool sym : {true, false}) {
                const QuantSpec spec = intSpec(d, Granularity::PerGroup, sym, 8);
                const auto out = values(fakeQuantize(x, spec));
                const QuantParams p = computeParams(spec, observeRange(x, spec));
                const auto generic = values(fakeQuantize(x, spec, p));
                for (int i = 0; i < 32; ++i) {
                    QVERIFY(sameFloat(out[i], generic[i]));
                    if (i < 8 || (i >= 16 && i < 24))
                        QVERIFY2(std::isnan(out[i]), "NaN/Inf group must be NaN");
                    else
                        QVERIFY(std::isfinite(out[i]));
                }
                // Codes of a NaN group are its zero point.
                const QuantizedTensor q = quantize(x, spec, p);
                const int zp0 = p.zeroPoint.reshape({-1})[0].item<int>();
                QCOMPARE(q.codes[0][3].item<int>(), zp0);
            }
        }
        // Inf in a per-tensor spec with a clean scale saturates to qmax.
        QuantParams p;
        p.scale = at::scalar_tensor(0.1f);
        p.zeroPoint = at::scalar_tensor(0, at::kInt);
        const at::Tensor inf = tensorOf(
            {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}, {2});
        const auto sat =
            values(fakeQuantize(inf, intSpec(DataType::Int8, Granularity::PerTensor, true), p));
        QCOMPARE(sat[0], 127 * 0.1f);
        QCOMPARE(sat[1], -128 * 0.1f);
    }

    void bf16ScalesAreComputedInBf16() {
        // Quark computes "float" scales in the model dtype: emulate bf16 arithmetic by rounding
        // each ATen op's fp32 result to bf16.
        const at::Tensor x32 = randomWeights({4, 64}, 5);
        const at::Tensor x = x32.to(at::kBFloat16);
        const auto xv = values(x);
        for (bool sym : {true, false}) {
            const QuantSpec spec = intSpec(DataType::Uint4, Granularity::PerGroup, sym, 32);
            const QuantParams p = computeParams(spec, observeRange(x, spec));
            QCOMPARE(p.scale.scalar_type(), at::kBFloat16);
            const auto scales = values(p.scale);
            const auto zps = p.zeroPoint.to(at::kInt).contiguous();
            const at::Tensor out = fakeQuantize(x, spec, p);
            QCOMPARE(out.scalar_type(), at::kBFloat16);
            const auto ov = values(out);
            for (int g = 0; g < 8; ++g) {
                float mn = xv[g * 32], mx = xv[g * 32];
                for (int i = 0; i < 32; ++i) {
                    mn = std::min(mn, xv[g * 32 + i]);
                    mx = std::max(mx, xv[g * 32 + i]);
                }
                const float minNeg = std::min(mn, 0.0f), maxPos = std::max(mx, 0.0f);
                float s;
                int zp = 0;
                if (sym) {
                    s = std::max(roundBf16(std::max(-minNeg, maxPos) / 7.5f), FLT_EPSILON);
                } else {
                    s = std::max(roundBf16(roundBf16(maxPos - minNeg) / 15.0f), FLT_EPSILON);
                    zp = std::clamp(0 - int(std::nearbyint(roundBf16(minNeg / s))), 0, 15);
                }
                QVERIFY(sameFloat(scales[g], s));
                QCOMPARE(zps.data_ptr<int32_t>()[g], zp);
                for (int i = 0; i < 32; ++i) {
                    const float ref = roundBf16(refFake(xv[g * 32 + i], {s, zp}, 0, 15));
                    QVERIFY(sameFloat(ov[g * 32 + i], ref));
                }
            }
        }
    }

    void pow2Scales() {
        // int8 symmetric, range [-1.3, 0.7]: s = 2.6/255, pos = round(-log2 s) = 7 -> 2^-7, zp 0.
        const at::Tensor a = tensorOf({-1.3f, 0.7f, 0.2f}, {3});
        QuantSpec spec = intSpec(DataType::Int8, Granularity::PerTensor, true);
        spec.scaleType = ScaleType::Pow2;
        QuantParams p = computeParams(spec, observeRange(a, spec));
        QCOMPARE(p.scale.item<float>(), std::ldexp(1.0f, -7));
        QCOMPARE(p.zeroPoint.item<int>(), 0);
        // uint8 asymmetric, range [-1, 3]: s = 4/255, pos 6 -> 2^-6; zp0 = int(63.75) = 63,
        // new rmin = -63/64, zp = round(63) = 63.
        const at::Tensor b = tensorOf({-1.0f, 3.0f}, {2});
        spec = intSpec(DataType::Uint8, Granularity::PerTensor, false);
        spec.scaleType = ScaleType::Pow2;
        p = computeParams(spec, observeRange(b, spec));
        QCOMPARE(p.scale.item<float>(), std::ldexp(1.0f, -6));
        QCOMPARE(p.zeroPoint.item<int>(), 63);
        QCOMPARE(values(fakeQuantize(b, spec, p)), (std::vector<float>{-63.0f / 64, 3.0f}));
    }

    void fastPathIsBitIdenticalToGeneric() {
        at::Tensor x = randomWeights({96, 512}, 99, 20);
        // Sprinkle exact ties, zeros, a constant group and non-finite values.
        x[0].narrow(0, 0, 32).fill_(0.0f);
        x[1].narrow(0, 0, 32).fill_(-0.7f);
        x[2][5] = std::numeric_limits<float>::quiet_NaN();
        x[3][40] = std::numeric_limits<float>::infinity();
        x[4][70] = -std::numeric_limits<float>::infinity();
        for (int i = 0; i < 64; ++i)
            x[5][i] = 0.5f * float(i - 32);
        int checked = 0;
        for (DataType d : kIntTypes) {
            for (bool sym : {true, false}) {
                std::vector<QuantSpec> specs;
                for (int g : {32, 64, 128})
                    specs.push_back(intSpec(d, Granularity::PerGroup, sym, g));
                specs.push_back(intSpec(d, Granularity::PerChannel, sym));
                specs.push_back(intSpec(d, Granularity::PerToken, sym));
                for (QuantSpec spec : specs) {
                    for (ScaleType st : {ScaleType::Float, ScaleType::Float32}) {
                        spec.scaleType = st;
                        QVERIFY(fastPathApplies(x, spec));
                        const FastQuantResult fast = fakeQuantizeFast(x, spec, true);
                        const QuantParams p = computeParams(spec, observeRange(x, spec));
                        const at::Tensor generic = fakeQuantize(x, spec, p);
                        const QString what = QString::fromStdString(spec.summary());
                        QCOMPARE(firstDifference(fast.fake, generic), int64_t(-1));
                        QCOMPARE(fast.scale.sizes(), p.scale.sizes());
                        QCOMPARE(firstDifference(fast.scale, p.scale), int64_t(-1));
                        QVERIFY2(at::equal(fast.zeroPoint, p.zeroPoint.to(at::kInt)),
                                 qPrintable(what));
                        QVERIFY2(at::equal(fast.codes, quantize(x, spec, p).codes),
                                 qPrintable(what));
                        ++checked;
                    }
                }
            }
        }
        QCOMPARE(checked, 6 * 2 * 5 * 2);
        // Not applicable: bf16, per tensor, a non-last group axis, percentile observer.
        QuantSpec g = intSpec(DataType::Int4, Granularity::PerGroup, true, 32);
        QVERIFY(!fastPathApplies(x.to(at::kBFloat16), g));
        QVERIFY(!fastPathApplies(x, intSpec(DataType::Int4, Granularity::PerTensor, true)));
        g.chAxis = 0;
        QVERIFY(!fastPathApplies(x, g));
        QVERIFY_THROWS_EXCEPTION(qs::Error, fakeQuantizeFast(x, g));
    }

    void badInputsNameTheProblem() {
        const QuantSpec spec = intSpec(DataType::Int4, Granularity::PerGroup, true, 48);
        try {
            fakeQuantize(at::zeros({2, 64}), spec);
            QFAIL("expected an error");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("group_size"));
        }
        QVERIFY_THROWS_EXCEPTION(qs::Error, fakeQuantize(at::zeros({2, 64}, at::kDouble), spec));
        QuantSpec ch = intSpec(DataType::Int8, Granularity::PerChannel, true);
        ch.chAxis = 3;
        try {
            observeRange(at::zeros({2, 64}), ch);
            QFAIL("expected an error");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("ch_axis"));
        }
    }
};

QS_TEST_APPLESS_MAIN(TestQuantInt)
#include "tst_quant_int.moc"
