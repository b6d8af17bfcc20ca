// Packing layouts as Quark's quark/torch/utils/pack.py defines them, checked on hand-built words
// and by round trips through quantize -> pack -> unpack -> dequantize.
#include "QuantTestHelpers.h"
#include "TestMain.h"

#include "quant/Packing.h"
#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <QtTest>

#include <array>
#include <limits>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

at::Tensor ints(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
    return at::tensor(v, at::kInt).reshape(shape).clone();
}

at::Tensor bytes(const std::vector<uint8_t>& v) {
    at::Tensor t = at::empty({int64_t(v.size())}, at::kByte);
    std::copy(v.begin(), v.end(), t.data_ptr<uint8_t>());
    return t;
}

std::vector<int32_t> intValues(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kInt).contiguous();
    return std::vector<int32_t>(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
}

} // namespace

class TestQuantPack : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void int4WordLayout() {
        // Element j has value j. "reorder": nibble i holds element [0,2,4,6,1,3,5,7][i], so
        // reading the hex digits from the top: 7 5 3 1 6 4 2 0. "order": 7 6 5 4 3 2 1 0.
        const at::Tensor codes = ints({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8});
        QCOMPARE(uint32_t(packInt4(codes, PackOrder::Reorder).item<int32_t>()), 0x75316420u);
        QCOMPARE(uint32_t(packInt4(codes, PackOrder::Order).item<int32_t>()), 0x76543210u);
        // Signed codes keep their low nibble: -8..-1 are 8..F.
        const at::Tensor neg = ints({-1, -2, -3, -4, -5, -6, -7, -8}, {8});
        QCOMPARE(uint32_t(packInt4(neg, PackOrder::Order).item<int32_t>()), 0x89ABCDEFu);
        QCOMPARE(intValues(unpackInt4(packInt4(neg, PackOrder::Order), PackOrder::Order, true, 8)),
                 intValues(neg));
    }

    void int4RoundTripsWithPadding() {
        for (PackOrder order : {PackOrder::Reorder, PackOrder::Order}) {
            for (bool isSigned : {true, false}) {
                const at::Tensor codes = isSigned ? at::randint(-8, 8, {5, 27}, at::kInt)
                                                  : at::randint(0, 16, {5, 27}, at::kInt);
                const at::Tensor packed = packInt4(codes, order);
                QCOMPARE(packed.sizes(), (at::IntArrayRef{5, 4}));
                QCOMPARE(packed.scalar_type(), at::kInt);
                QVERIFY(at::equal(unpackInt4(packed, order, isSigned, 27), codes));
                // The padding nibbles (elements 27..31 of the last word) are zero.
                for (int64_t r = 0; r < 5; ++r) {
                    const auto last = uint32_t(packed[r][3].item<int32_t>());
                    for (int i = 0; i < 8; ++i) {
                        const int elem = (order == PackOrder::Reorder
                                              ? std::array<int, 8>{0, 2, 4, 6, 1, 3, 5, 7}
                                              : std::array<int, 8>{0, 1, 2, 3, 4, 5, 6, 7})[i];
                        if (24 + elem >= 27)
                            QCOMPARE((last >> (4 * i)) & 0xFu, 0u);
                    }
                }
            }
        }
        QVERIFY_THROWS_EXCEPTION(
            qs::Error, unpackInt4(at::zeros({2, 3}, at::kInt), PackOrder::Order, true, 30));
    }

    void int3Layout() {
        // Value k at bits 3k..3k+2 of a little-endian 24-bit word (Quark Pack_3_bits).
        const std::vector<int32_t> v{1, 2, 3, -4, -3, -2, -1, 0};
        uint32_t word = 0;
        for (int k = 0; k < 8; ++k)
            word |= (uint32_t(v[k]) & 7u) << (3 * k);
        const at::Tensor packed = packInt3(ints(v, {8}));
        QCOMPARE(packed.numel(), int64_t(3));
        for (int k = 0; k < 3; ++k)
            QCOMPARE(unsigned(packed[k].item<uint8_t>()), (word >> (8 * k)) & 0xFFu);
        QCOMPARE(intValues(unpackInt3(packed, true)), v);
        QVERIFY_THROWS_EXCEPTION(qs::Error, packInt3(ints({1, 2, 3}, {3})));
    }

    void fp4Layout() {
        // Low nibble = even element: codes 0x1, 0x2 -> 0x21.
        const at::Tensor packed = packFp4(bytes({0x1, 0x2, 0xF, 0x8}));
        QCOMPARE(unsigned(packed[0].item<uint8_t>()), 0x21u);
        QCOMPARE(unsigned(packed[1].item<uint8_t>()), 0x8Fu);
        QVERIFY(at::equal(unpackFp4(packed), bytes({0x1, 0x2, 0xF, 0x8})));
        QVERIFY_THROWS_EXCEPTION(qs::Error, packFp4(bytes({1, 2, 3})));
    }

    void fp6Layout() {
        // v0 | v1 << 6 | v2 << 12 | v3 << 18 as three little-endian bytes.
        const std::vector<uint8_t> v{0x3F, 0x01, 0x2A, 0x15};
        const uint32_t word = 0x3Fu | (0x01u << 6) | (0x2Au << 12) | (0x15u << 18);
        const at::Tensor packed = packFp6(bytes(v));
        QCOMPARE(packed.numel(), int64_t(3));
        for (int k = 0; k < 3; ++k)
            QCOMPARE(unsigned(packed[k].item<uint8_t>()), (word >> (8 * k)) & 0xFFu);
        QVERIFY(at::equal(unpackFp6(packed), bytes(v)));
    }

    void e8m0Tensors() {
        const at::Tensor s = tensorOf({1.0f, 0.5f, std::ldexp(1.0f, -127), std::ldexp(1.0f, 127),
                                       std::numeric_limits<float>::quiet_NaN()},
                                      {5});
        const at::Tensor codes = e8m0FromScale(s);
        QCOMPARE(intValues(codes), (std::vector<int32_t>{127, 126, 0, 254, 255}));
        QVERIFY(firstDifference(scaleFromE8m0(codes), s) < 0);
        QVERIFY_THROWS_EXCEPTION(qs::Error, e8m0FromScale(tensorOf({3.0f}, {1})));
    }

    void everyPackedTypeRoundTrips() {
        const at::Tensor x = randomWeights({6, 64}, 21);
        for (const auto& t : allTypeTraits()) {
            if (t.kernel == Kernel::Mx6 || t.kernel == Kernel::Bfp16 || t.kernel == Kernel::Cast)
                continue;
            QuantSpec spec = QuantSpec::defaults(t.type);
            if (t.encoding == Encoding::Int) {
                spec.granularity = Granularity::PerGroup;
                spec.chAxis = -1;
                spec.groupSize = 32;
            }
            const QuantizedTensor q = quantize(x, spec);
            for (PackOrder order : {PackOrder::Reorder, PackOrder::Order}) {
                const at::Tensor packed = packCodes(q, order);
                QuantizedTensor back = q;
                back.codes = unpackCodes(packed, t.type, 64, order);
                QVERIFY2(at::equal(back.codes.to(q.codes.scalar_type()), q.codes), t.name);
                QVERIFY2(firstDifference(dequantize(back, spec), fakeQuantize(x, spec, q.params)) <
                             0,
                         t.name);
            }
            // Storage width: int4/fp4 nibbles, fp6 three bytes per four, int3 three per eight.
            const at::Tensor packed = packCodes(q);
            const int64_t storedBits = packed.numel() * packed.element_size() * 8;
            if (t.pack != PackFormat::None)
                QCOMPARE(storedBits, int64_t(6 * 64) * t.bits);
        }
    }
};

QS_TEST_APPLESS_MAIN(TestQuantPack)
#include "tst_quant_pack.moc"
