// Scalar minifloat and E8M0 arithmetic against references written from the OCP 8-bit float and
// MX v1.0 specifications: every code decoded by the spec formula, rounding checked against a
// brute-force nearest-value search over the decoded table with ties to the even code.
#include "TestMain.h"
#include "quant/FloatFormats.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace qs::quant;

namespace {

struct Fmt {
    const char* name;
    const MiniFloatFormat* f;
    int ebits, mbits, bias;
    bool nanOnly, infNan;
};

const Fmt kFormats[] = {
    {"e4m3", &kFp8E4M3, 4, 3, 7, true, false},  {"e5m2", &kFp8E5M2, 5, 2, 15, false, true},
    {"e3m2", &kFp6E3M2, 3, 2, 3, false, false}, {"e2m3", &kFp6E2M3, 2, 3, 1, false, false},
    {"e2m1", &kFp4E2M1, 2, 1, 1, false, false},
};

// Value of a code straight from the spec: subnormal M * 2^(1-bias-m), normal
// (1 + M / 2^m) * 2^(E - bias); E4M3 S.1111.111 is NaN, E5M2 E=31 is Inf/NaN.
double specDecode(unsigned code, const Fmt& f) {
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

// Non-negative finite codes with their values.
std::vector<std::pair<unsigned, double>> positiveTable(const Fmt& f) {
    std::vector<std::pair<unsigned, double>> t;
    for (unsigned c = 0; c < (1u << (f.ebits + f.mbits)); ++c) {
        const double v = specDecode(c, f);
        if (std::isfinite(v))
            t.push_back({c, v});
    }
    return t;
}

// Nearest table value to |x| (saturating at the largest), ties to the even code.
double bruteRound(double x, const Fmt& f) {
    const auto table = positiveTable(f);
    const double a = std::fabs(x);
    if (a >= table.back().second) // saturate (also avoids distance ties far beyond the range)
        return std::signbit(x) ? -table.back().second : table.back().second;
    double best = 0, bestDist = std::numeric_limits<double>::infinity();
    unsigned bestCode = 0;
    for (const auto& [c, v] : table) {
        const double d = std::fabs(v - a);
        if (d < bestDist || (d == bestDist && (c & 1u) == 0 && (bestCode & 1u))) {
            best = v;
            bestDist = d;
            bestCode = c;
        }
    }
    return std::signbit(x) ? -best : best;
}

float nextUp(float x) {
    return std::nextafter(x, std::numeric_limits<float>::infinity());
}
float nextDown(float x) {
    return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

// Inputs that probe every tie, both neighbours of each tie, values past the maximum, tiny values
// and a log-uniform random sample.
std::vector<float> probeInputs(const Fmt& f) {
    std::vector<float> in;
    const auto table = positiveTable(f);
    for (size_t i = 0; i + 1 < table.size(); ++i) {
        const auto mid = static_cast<float>((table[i].second + table[i + 1].second) / 2);
        for (float v : {mid, nextUp(mid), nextDown(mid), float(table[i].second)}) {
            in.push_back(v);
            in.push_back(-v);
        }
    }
    const float mx = f.f->maxNorm;
    for (float v : {mx, nextUp(mx), mx * 1.03f, mx * 1.2f, mx * 4.0f, 1e30f, 1e-30f, 1e-45f,
                    std::numeric_limits<float>::denorm_min(), 0.0f}) {
        in.push_back(v);
        in.push_back(-v);
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> expo(-20.0f, std::log2(mx) + 2.0f);
    for (int i = 0; i < 4000; ++i)
        in.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(expo(rng)));
    return in;
}

bool sameBits(float a, float b) {
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y;
}

} // namespace

class TestQuantFormats : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void decodeMatchesSpecForEveryCode() {
        for (const Fmt& f : kFormats) {
            for (unsigned c = 0; c < (1u << (1 + f.ebits + f.mbits)); ++c) {
                const double ref = specDecode(c, f);
                const float got = decodeMiniFloat(static_cast<uint8_t>(c), *f.f);
                if (std::isnan(ref))
                    QVERIFY2(std::isnan(got), f.name);
                else
                    QCOMPARE(static_cast<double>(got), ref);
            }
        }
    }

    void knownExtremes() {
        QCOMPARE(decodeMiniFloat(0x7E, kFp8E4M3), 448.0f);
        QCOMPARE(decodeMiniFloat(0x01, kFp8E4M3), std::ldexp(1.0f, -9));
        QVERIFY(std::isnan(decodeMiniFloat(0x7F, kFp8E4M3)));
        QCOMPARE(decodeMiniFloat(0x7B, kFp8E5M2), 57344.0f);
        QCOMPARE(decodeMiniFloat(0x01, kFp8E5M2), std::ldexp(1.0f, -16));
        QVERIFY(std::isinf(decodeMiniFloat(0x7C, kFp8E5M2)));
        QCOMPARE(decodeMiniFloat(0x1F, kFp6E3M2), 28.0f);
        QCOMPARE(decodeMiniFloat(0x01, kFp6E3M2), 0.0625f);
        QCOMPARE(decodeMiniFloat(0x1F, kFp6E2M3), 7.5f);
        QCOMPARE(decodeMiniFloat(0x01, kFp6E2M3), 0.125f);
        const float e2m1[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        for (unsigned c = 0; c < 8; ++c) {
            QCOMPARE(decodeMiniFloat(static_cast<uint8_t>(c), kFp4E2M1), e2m1[c]);
            QCOMPARE(decodeMiniFloat(static_cast<uint8_t>(c | 8), kFp4E2M1), -e2m1[c]);
        }
    }

    void encodeInvertsDecode() {
        for (const Fmt& f : kFormats) {
            for (unsigned c = 0; c < (1u << (1 + f.ebits + f.mbits)); ++c) {
                const float v = decodeMiniFloat(static_cast<uint8_t>(c), *f.f);
                if (!std::isfinite(v))
                    continue;
                QCOMPARE(unsigned(encodeMiniFloat(v, *f.f)), c);
            }
        }
        QCOMPARE(encodeMiniFloat(std::numeric_limits<float>::quiet_NaN(), kFp8E4M3), uint8_t(0x7F));
        QCOMPARE(encodeMiniFloat(-std::numeric_limits<float>::infinity(), kFp8E5M2), uint8_t(0xFC));
        QCOMPARE(encodeMiniFloat(std::numeric_limits<float>::infinity(), kFp4E2M1), uint8_t(0x7));
    }

    void fp8RoundingIsNearestEvenWithSaturation() {
        for (const Fmt& f : kFormats) {
            for (float x : probeInputs(f)) {
                const float got = roundFp8(x, *f.f);
                const auto ref = static_cast<float>(bruteRound(x, f));
                QVERIFY2(sameBits(got, ref) ||
                             (got == 0 && ref == 0 && std::signbit(got) == std::signbit(x)),
                         qPrintable(QString("%1: x=%2 got=%3 ref=%4")
                                        .arg(f.name)
                                        .arg(double(x), 0, 'g', 9)
                                        .arg(double(got), 0, 'g', 9)
                                        .arg(double(ref), 0, 'g', 9)));
            }
        }
    }

    void fp8HandWorkedCases() {
        // Ties between 1.0 and 1.125 go to the even mantissa (1.0); 1.1875 -> 1.25.
        QCOMPARE(roundFp8(1.0625f, kFp8E4M3), 1.0f);
        QCOMPARE(roundFp8(1.1875f, kFp8E4M3), 1.25f);
        // Half the smallest subnormal rounds to (signed) zero, 1.5x rounds to 2 * 2^-9.
        QCOMPARE(roundFp8(std::ldexp(1.0f, -10), kFp8E4M3), 0.0f);
        QVERIFY(std::signbit(roundFp8(-std::ldexp(1.0f, -10), kFp8E4M3)));
        QCOMPARE(roundFp8(3 * std::ldexp(1.0f, -10), kFp8E4M3), std::ldexp(1.0f, -8));
        // Saturation (Quark clamps before the cast) and NaN.
        QCOMPARE(roundFp8(464.0f, kFp8E4M3), 448.0f);
        QCOMPARE(roundFp8(std::numeric_limits<float>::infinity(), kFp8E4M3), 448.0f);
        QCOMPARE(roundFp8(-1e30f, kFp8E5M2), -57344.0f);
        QVERIFY(std::isnan(roundFp8(std::numeric_limits<float>::quiet_NaN(), kFp8E4M3)));
        // 2.5 * 2^-16 (E5M2 subnormals are multiples of 2^-16): tie between 2 and 3 -> 2.
        QCOMPARE(roundFp8(2.5f * std::ldexp(1.0f, -16), kFp8E5M2), 2 * std::ldexp(1.0f, -16));
    }

    void quarkElementRounding() {
        for (const Fmt& f : kFormats) {
            for (float x : probeInputs(f)) {
                const float got = roundQuarkElement(x, *f.f);
                float ref = static_cast<float>(bruteRound(x, f));
                if (ref == 0.0f)
                    ref = 0.0f; // Quark's kernel returns +0 for anything that rounds to zero
                QVERIFY2(sameBits(got, ref), qPrintable(QString("%1 x=%2 got=%3 ref=%4")
                                                            .arg(f.name)
                                                            .arg(double(x))
                                                            .arg(double(got))
                                                            .arg(double(ref))));
            }
        }
        const float inf = std::numeric_limits<float>::infinity();
        QCOMPARE(roundQuarkElement(inf, kFp4E2M1), inf);
        QCOMPARE(roundQuarkElement(-inf, kFp4E2M1), -inf);
        QVERIFY(std::isnan(roundQuarkElement(std::numeric_limits<float>::quiet_NaN(), kFp4E2M1)));
        QVERIFY(!std::signbit(roundQuarkElement(-0.0f, kFp4E2M1)));
        QCOMPARE(roundQuarkElement(5.0f, kFp4E2M1), 4.0f);  // tie 4|6 -> 4 (even code 6)
        QCOMPARE(roundQuarkElement(2.5f, kFp4E2M1), 2.0f);  // tie 2|3 -> 2
        QCOMPARE(roundQuarkElement(0.25f, kFp4E2M1), 0.0f); // tie 0|0.5 -> 0
        QCOMPARE(roundQuarkElement(0.75f, kFp4E2M1), 1.0f); // tie 0.5|1 -> 1
        QCOMPARE(roundQuarkElement(7.0f, kFp4E2M1), 6.0f);  // saturates
    }

    void e8m0() {
        for (int k = -127; k <= 127; ++k) {
            const float s = std::ldexp(1.0f, k);
            QCOMPARE(int(encodeE8M0(s)), k + 127);
            QCOMPARE(decodeE8M0(static_cast<uint8_t>(k + 127)), s);
        }
        QCOMPARE(encodeE8M0(std::numeric_limits<float>::quiet_NaN()), uint8_t(0xFF));
        QVERIFY(std::isnan(decodeE8M0(0xFF)));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encodeE8M0(3.0f));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encodeE8M0(0.0f));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encodeE8M0(std::ldexp(1.0f, -128)));
    }

    void evenRoundScale() {
        // Reference: write amax = sig * 2^n with sig in [1, 2); round n up when
        // sig >= 2 - 2^-(mbits+1) (OCP MX 6.3 as Quark's even_round), subtract emax, clamp.
        auto ref = [](float amax, int mbits, int emax) -> float {
            if (std::isnan(amax))
                return amax;
            if (std::isinf(amax))
                return std::ldexp(1.0f, 127);
            const double up = 1.0 - std::ldexp(1.0, -(mbits + 1));
            int n;
            if (amax == 0.0f) {
                n = -126; // Quark fills zero with the smallest normal
            } else if (amax < std::ldexp(1.0f, -126)) {
                // fp32 subnormal: the rounding carry reaches the smallest normal or the masked
                // bits are zero (log2 -> -inf, clamped).
                n = amax >= std::ldexp(up, -126) ? -126 : -1000;
            } else {
                int e;
                const double m = std::frexp(double(amax), &e);
                n = e - 1;
                if (2 * m >= 1.0 + up)
                    ++n;
            }
            return std::ldexp(1.0f, std::clamp(n - emax, -127, 127));
        };
        QCOMPARE(quarkEvenRoundScale(6.0f, 1, 2), 1.0f);
        QCOMPARE(quarkEvenRoundScale(7.0f, 1, 2), 2.0f);
        QCOMPARE(quarkEvenRoundScale(6.99f, 1, 2), 1.0f);
        QCOMPARE(quarkEvenRoundScale(448.0f, 3, 8), 1.0f);
        QCOMPARE(quarkEvenRoundScale(496.0f, 3, 8), 2.0f);
        QCOMPARE(quarkEvenRoundScale(0.0f, 1, 2), std::ldexp(1.0f, -127));
        QCOMPARE(quarkEvenRoundScale(std::numeric_limits<float>::infinity(), 1, 2),
                 std::ldexp(1.0f, 127));
        QVERIFY(std::isnan(quarkEvenRoundScale(std::numeric_limits<float>::quiet_NaN(), 1, 2)));
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> expo(-140.0f, 127.0f);
        const std::pair<int, int> params[] = {{1, 2}, {2, 4}, {3, 2}, {3, 8}, {2, 15}, {8, 0}};
        for (int i = 0; i < 20000; ++i) {
            const float a = std::exp2(expo(rng));
            const auto [mb, em] = params[i % 6];
            QCOMPARE(quarkEvenRoundScale(a, mb, em), ref(a, mb, em));
        }
    }

    void floorLog2IsExact() {
        QCOMPARE(floorLog2(1.0f), 0);
        QCOMPARE(floorLog2(nextDown(8.0f)), 2);
        QCOMPARE(floorLog2(8.0f), 3);
        QCOMPARE(floorLog2(std::numeric_limits<float>::denorm_min()), -149);
        QCOMPARE(floorLog2(std::ldexp(1.0f, -130) * 1.5f), -130);
        QCOMPARE(roundHalfEven(2.5f), 2.0f);
        QCOMPARE(roundHalfEven(3.5f), 4.0f);
        QCOMPARE(roundHalfEven(-2.5f), -2.0f);
    }
};

QS_TEST_APPLESS_MAIN(TestQuantFormats)
#include "tst_quant_formats.moc"
