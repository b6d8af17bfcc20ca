// The ggml type table (io/GgmlTypes.h) that the GGUF reader, the decoder and the writer share:
// ggml's sizes, the llama file types, the codecs each written type needs, and the order in which
// the GGUF export offers its types (the GUI's list and the CLI's help).
#include "TestMain.h"
#include "io/GgmlDequantize.h"
#include "io/GgmlTypes.h"
#include "util/Error.h"

#include <QtTest>

#include <cmath>
#include <random>
#include <string>
#include <vector>

class TestGgmlTypes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void sizesAreGgmls() {
        struct Row {
            uint32_t id;
            const char* name;
            int64_t block;
            uint64_t bytes;
        };
        const Row rows[] = {{0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},
                            {3, "Q4_1", 32, 20},    {6, "Q5_0", 32, 22},    {8, "Q8_0", 32, 34},
                            {12, "Q4_K", 256, 144}, {14, "Q6_K", 256, 210}, {30, "BF16", 1, 2},
                            {39, "MXFP4", 32, 17}};
        for (const Row& r : rows) {
            const qs::GgmlTypeTraits& t = qs::ggmlTypeTraits(r.id);
            QCOMPARE(std::string(t.name), std::string(r.name));
            QCOMPARE(t.blockSize, r.block);
            QCOMPARE(t.blockBytes, r.bytes);
        }
        for (uint32_t removed : {4u, 5u, 31u, 36u, 40u, 1000u}) {
            QCOMPARE(std::string(qs::ggmlTypeTraits(removed).name), std::string("unknown"));
            QCOMPARE(qs::ggmlTypeTraits(removed).blockSize, int64_t(0));
        }
        QCOMPARE(qs::ggmlTypeLabel(12), std::string("type 12 (Q4_K)"));
        QCOMPARE(qs::ggmlRowBytes(512, qs::GgmlType::Q6_K), uint64_t(420));
    }

    // The GGUF export's list: its order is what the GUI and `--help` show.
    void offeredTypesInOrder() {
        std::vector<std::string> names;
        for (qs::GgmlType t : qs::ggmlOfferedTypes())
            names.push_back(qs::ggmlTypeName(t));
        const std::vector<std::string> expected = {"q8_0", "q4_0", "q4_1", "q4_k",
                                                   "q6_k", "f16",  "bf16", "f32"};
        QCOMPARE(names, expected);
        QCOMPARE(*qs::ggmlOfferedTypeByName("q4_k"), qs::GgmlType::Q4_K);
        QVERIFY(!qs::ggmlOfferedTypeByName("q5_0")); // written only as Q4_K's fallback
        QVERIFY(!qs::ggmlOfferedTypeByName("Q4_K")); // callers lower-case first
    }

    // Every type Quantscope writes is also decoded and declares its llama file type, and its
    // rows come back within the block's rounding.
    void writtenTypesRoundTrip() {
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> x(512);
        for (float& v : x)
            v = dist(rng);
        int written = 0;
        for (uint32_t id = 0; id < 64; ++id) {
            const qs::GgmlTypeTraits& t = qs::ggmlTypeTraits(id);
            if (!t.fromFloat)
                continue;
            ++written;
            QVERIFY2(t.toFloat, t.name);
            QVERIFY2(t.fileType >= 0, t.name);
            QVERIFY(qs::ggmlCanDequantize(id));
            const auto type = qs::GgmlType(id);
            const std::string bytes = qs::ggmlQuantizeRow(x.data(), int64_t(x.size()), type);
            QCOMPARE(uint64_t(bytes.size()), qs::ggmlRowBytes(int64_t(x.size()), type));
            std::vector<float> y(x.size());
            qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(bytes.data()), y.data(),
                                  int64_t(y.size()), type);
            float worst = 0.0f;
            for (size_t i = 0; i < x.size(); ++i)
                worst = std::max(worst, std::fabs(x[i] - y[i]));
            QVERIFY2(worst < 0.15f, t.name); // 4-bit blocks of values in [-1, 1): step <= 2/15
            if (id == uint32_t(qs::GgmlType::F32))
                QCOMPARE(worst, 0.0f);
        }
        QCOMPARE(written, 9); // the eight offered types and Q5_0
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 qs::ggmlQuantizeRow(x.data(), 256, qs::GgmlType(10))); // Q2_K
        QVERIFY(!qs::ggmlCanDequantize(10));
    }
};

QS_TEST_GUILESS_MAIN(TestGgmlTypes)
#include "tst_ggmltypes.moc"
