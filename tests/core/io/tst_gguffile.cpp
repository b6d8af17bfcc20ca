// The GGUF reader: llama.cpp's own converter output (stories260K.gguf) and files our GgufExporter
// writes parse with every key, type and tensor where the writer put them; ggml's block formulas
// decode element by element; hostile headers are refused with a qs::Error naming the field and
// the limit, never a crash or an allocation the file cannot back.
#include "TestMain.h"
#include "TestSupport.h"

#include "GgufTestBuilder.h"
#include "export/GgufExporter.h"
#include "io/GgmlDequantize.h"
#include "io/GgmlKQuants.h"
#include "io/GgufFile.h"
#include "util/Error.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <QFile>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

using namespace ggufbuild;

namespace {

qs::GgufHeader parse(const std::string& bytes) {
    return qs::parseGgufHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                               "test.gguf");
}

// The qs::Error a parse throws (its field and reason joined), or "accepted".
std::string refusal(const std::string& bytes) {
    try {
        parse(bytes);
    } catch (const qs::Error& e) {
        return e.field() + " | " + e.reason();
    }
    return "accepted";
}

#define QVERIFY_REFUSED(bytes, field, words)                                                       \
    do {                                                                                           \
        const std::string r = refusal(bytes);                                                      \
        QVERIFY2(r.rfind(std::string(field) + " |", 0) == 0, r.c_str());                           \
        QVERIFY2(r.find(words) != std::string::npos, r.c_str());                                   \
    } while (0)

// A valid two-tensor file: a [2, 32] Q8_0 matrix and a 4-element F32 vector.
std::vector<Tensor> twoTensors() {
    return {{"a.weight", {32, 2}, 8, 0}, {"b.weight", {4}, 0, 96}};
}
std::string validFile() {
    return gguf({kvString("general.architecture", "llama"), kvU32("general.alignment", 32)},
                twoTensors(), std::string(96 + 16, '\0'));
}

uint16_t halfBits(float f) {
    return c10::Half(f).x;
}

} // namespace

class TestGgufFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // llama.cpp's converter output: 19 keys, 48 F32 tensors, default alignment.
    void llamaCppFileParses() {
        const auto file = qs::GgufFile::open(
            qs::test::sharedPath("models/stories260K-gguf/stories260K.gguf").toStdString());
        const qs::GgufHeader& h = file->header();
        QCOMPARE(h.version, 3u);
        QCOMPARE(int(h.metadata.size()), 19);
        QCOMPARE(int(h.tensors.size()), 48);
        QCOMPARE(h.alignment, uint64_t(32));
        QCOMPARE(h.dataOffset, uint64_t(14176)); // header ends at 14152, aligned up to 32
        QCOMPARE(h.keyOrder.front(), std::string("tokenizer.ggml.tokens"));
        QCOMPARE(h.find("general.architecture")->s, std::string("llama"));
        QCOMPARE(h.find("llama.block_count")->u, uint64_t(5));
        QCOMPARE(h.find("llama.attention.layer_norm_rms_epsilon")->f, double(1e-5f));
        const qs::GgufValue& tokens = *h.find("tokenizer.ggml.tokens");
        QCOMPARE(tokens.elementType, qs::GgufValueType::String);
        QCOMPARE(int(tokens.array.size()), 512);
        QCOMPARE(tokens.array[1].s, std::string("<s>"));
        QCOMPARE(h.find("tokenizer.ggml.token_type")->array[3].i, int64_t(6)); // <0x00>: BYTE
        QCOMPARE(h.find("tokenizer.ggml.padding_token_id")->u, uint64_t(0xffffffffu));
        const qs::GgufTensorInfo* q = file->find("blk.0.attn_q.weight");
        QVERIFY(q);
        QCOMPARE(q->dims, (std::vector<int64_t>{64, 64}));
        QCOMPARE(q->offset, uint64_t(262400));
        const qs::GgufTensorInfo* down = file->find("blk.4.ffn_down.weight");
        QCOMPARE(down->shape(), (std::vector<int64_t>{64, 172}));
        QCOMPARE(down->byteSize, uint64_t(64 * 172 * 4));
        // F32 data decodes to the stored floats.
        const std::vector<float> w = file->dequantize(*q);
        QCOMPARE(std::memcmp(w.data(), file->data(*q), w.size() * 4), 0);
    }

    // Our exporter's files: every tensor's type, dims and aligned offset as written, metadata
    // of uint32, float32, string and array types.
    void exporterFilesParse_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<uint32_t>("ggml");
        QTest::newRow("q8_0") << "q8_0" << 8u;
        QTest::newRow("q4_1") << "q4_1" << 3u;
        QTest::newRow("f16") << "f16" << 1u;
    }
    void exporterFilesParse() {
        QFETCH(QString, type);
        QFETCH(uint32_t, ggml);
        const QString out = qs::test::tempDir("export-" + type) + "/out";
        const QStringList args = {"quantize",
                                  qs::test::sharedPath("models/stories260K"),
                                  "--quant-scheme",
                                  "uint4_wo_32",
                                  "--exclude-layers",
                                  "*",
                                  "--format",
                                  "gguf",
                                  "--gguf-type",
                                  type,
                                  "--out",
                                  out,
                                  "--quiet"};
        const qs::test::CliRun run = qs::test::runCli(args);
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const auto file = qs::GgufFile::open((out + "/model.gguf").toStdString());
        const qs::GgufHeader& h = file->header();
        QCOMPARE(h.find("general.alignment")->u, uint64_t(32));
        QCOMPARE(h.find("llama.rope.freq_base")->f, 10000.0);
        QCOMPARE(int(h.tensors.size()), 47);
        for (const qs::GgufTensorInfo& t : h.tensors) {
            QCOMPARE(t.offset % 32, uint64_t(0));
            // 2-D weights take the type when their rows split into its blocks (32; F16 has
            // none), the rest F32 (the exporter's rule); ffn_down rows are 172 long.
            const bool typed = t.dims.size() == 2 && (ggml == 1u || t.dims[0] % 32 == 0);
            QVERIFY2(t.type == (typed ? ggml : 0u), t.name.c_str());
        }
        QCOMPARE(file->find("blk.0.ffn_down.weight")->dims, (std::vector<int64_t>{172, 64}));
    }

    // Every half and bfloat16 bit pattern widens as c10's conversion does (NaNs stay NaN).
    void halfAndBfloat16Exact() {
        for (uint32_t bits = 0; bits < 65536; ++bits) {
            c10::Half h;
            h.x = uint16_t(bits);
            const float ours = qs::halfToFloat(uint16_t(bits)), ref = float(h);
            if (std::isnan(ref)) {
                QVERIFY(std::isnan(ours));
                continue;
            }
            QVERIFY2(std::memcmp(&ours, &ref, 4) == 0, std::to_string(bits).c_str());
            c10::BFloat16 b;
            b.x = uint16_t(bits);
            const float bours = qs::bfloat16ToFloat(uint16_t(bits)), bref = float(b);
            QVERIFY(std::isnan(bref) ? std::isnan(bours) : std::memcmp(&bours, &bref, 4) == 0);
        }
    }

    // Blocks built byte by byte, decoded against the formulas of ggml-quants.c written out.
    void blockFormulas() {
        std::mt19937 rng(7);
        std::uniform_int_distribution<int> byte(0, 255);
        const float d = 0.037109375f, m = -1.25f; // exact in half precision
        {                                         // Q8_0: y = d * q
            std::string block(34, '\0');
            const uint16_t db = halfBits(d);
            std::memcpy(block.data(), &db, 2);
            for (int j = 0; j < 32; ++j)
                block[2 + j] = char(byte(rng));
            std::vector<float> y(32);
            qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(block.data()), y.data(), 32,
                                  qs::GgmlType::Q8_0);
            for (int j = 0; j < 32; ++j)
                QCOMPARE(y[j], d * float(int8_t(block[2 + j])));
        }
        { // Q4_0: low nibbles are elements 0..15, high nibbles 16..31, y = d * (q - 8)
            std::string block(18, '\0');
            const uint16_t db = halfBits(d);
            std::memcpy(block.data(), &db, 2);
            for (int j = 0; j < 16; ++j)
                block[2 + j] = char(byte(rng));
            std::vector<float> y(32);
            qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(block.data()), y.data(), 32,
                                  qs::GgmlType::Q4_0);
            for (int j = 0; j < 16; ++j) {
                const uint8_t q = uint8_t(block[2 + j]);
                QCOMPARE(y[j], d * float((q & 15) - 8));
                QCOMPARE(y[16 + j], d * float((q >> 4) - 8));
            }
        }
        { // Q4_1: y = d * q + m
            std::string block(20, '\0');
            const uint16_t db = halfBits(d), mb = halfBits(m);
            std::memcpy(block.data(), &db, 2);
            std::memcpy(block.data() + 2, &mb, 2);
            for (int j = 0; j < 16; ++j)
                block[4 + j] = char(byte(rng));
            std::vector<float> y(32);
            qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(block.data()), y.data(), 32,
                                  qs::GgmlType::Q4_1);
            for (int j = 0; j < 16; ++j) {
                const uint8_t q = uint8_t(block[4 + j]);
                QCOMPARE(y[j], d * float(q & 15) + m);
                QCOMPARE(y[16 + j], d * float(q >> 4) + m);
            }
        }
    }

    // Q4_K and Q6_K decode through the reader bit for bit as the exporter's own K-quant decoders
    // (ggml's dequantize_row_q*_K, checked against ggml in tst_ggmlkquants); Q5_0 (llama.cpp's
    // fallback for Q4_K rows not a multiple of 256) within its grid: d = max/-16, the far side
    // clamps at code 15 = 15|d| against amax = 16|d|, so within |d| = amax/16, plus the f16
    // slack of d (2^-11 relative, |code * d| <= amax).
    void kQuantsAndQ5Decode() {
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(512);
        for (float& v : x)
            v = normal(rng);
        for (const qs::GgmlType type : {qs::GgmlType::Q4_K, qs::GgmlType::Q6_K}) {
            const std::string q = qs::ggmlQuantizeRow(x.data(), 512, type);
            QCOMPARE(uint64_t(q.size()), qs::ggmlRowBytes(512, type));
            const auto* bytes = reinterpret_cast<const uint8_t*>(q.data());
            std::vector<float> y(512), z(512);
            qs::ggmlDequantizeRow(bytes, y.data(), 512, type);
            if (type == qs::GgmlType::Q4_K)
                qs::ggmlDequantizeQ4KRow(bytes, 512, z.data());
            else
                qs::ggmlDequantizeQ6KRow(bytes, 512, z.data());
            QVERIFY(std::memcmp(y.data(), z.data(), y.size() * sizeof(float)) == 0);
        }
        const std::string q = qs::ggmlQuantizeRow(x.data(), 512, qs::GgmlType::Q5_0);
        QCOMPARE(uint64_t(q.size()), qs::ggmlRowBytes(512, qs::GgmlType::Q5_0));
        std::vector<float> y(512);
        qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(q.data()), y.data(), 512,
                              qs::GgmlType::Q5_0);
        for (int b = 0; b < 16; ++b) {
            float amax = 0;
            for (int j = 0; j < 32; ++j)
                amax = std::max(amax, std::fabs(x[b * 32 + j]));
            for (int j = 0; j < 32; ++j)
                QVERIFY2(std::fabs(y[b * 32 + j] - x[b * 32 + j]) <= amax / 16 + amax / 2048,
                         qPrintable(QString("block %1 element %2").arg(b).arg(j)));
        }
    }

    // The exporter's quantizers (ggml's reference) round trip within their grid: Q8_0 within
    // d/2 (x/d rounded to nearest, d = amax/127); Q4_0 within |d| = amax/8 (the largest
    // magnitude maps to -8, so the opposite side clamps at code 15 = +7|d|: an element up to
    // amax away from 7|d| is off by at most |d|); Q4_1 within d/2 (d = (max-min)/15). Plus the
    // slack of storing d (and m) in half precision, 2^-11 relative: |code| * |d| is at most
    // amax (Q8_0, Q4_0) or max - min <= 2 amax (Q4_1, plus |m| <= amax), so 3 amax / 2048.
    void exporterQuantizersRoundTrip() {
        std::mt19937 rng(3);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(256);
        for (float& v : x)
            v = normal(rng);
        for (const qs::GgmlType type :
             {qs::GgmlType::Q8_0, qs::GgmlType::Q4_0, qs::GgmlType::Q4_1, qs::GgmlType::F16}) {
            const std::string q = qs::ggmlQuantizeRow(x.data(), 256, type);
            QCOMPARE(uint64_t(q.size()), qs::ggmlRowBytes(256, type));
            std::vector<float> y(256);
            qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(q.data()), y.data(), 256, type);
            for (int b = 0; b < 8; ++b) {
                float amax = 0, lo = 1e30f, hi = -1e30f;
                for (int j = 0; j < 32; ++j) {
                    amax = std::max(amax, std::fabs(x[b * 32 + j]));
                    lo = std::min(lo, x[b * 32 + j]);
                    hi = std::max(hi, x[b * 32 + j]);
                }
                // Step of the grid, and the slack half-precision scales add (relative 2^-11 of
                // the largest magnitude per scale involved).
                const float step = type == qs::GgmlType::Q8_0   ? amax / 127
                                   : type == qs::GgmlType::Q4_0 ? amax / 8
                                   : type == qs::GgmlType::Q4_1 ? (hi - lo) / 15
                                                                : 0.0f;
                const float bound =
                    (type == qs::GgmlType::Q4_0 ? step : step / 2) + 3.0f * amax / 2048.0f;
                for (int j = 0; j < 32; ++j)
                    QVERIFY2(std::fabs(y[b * 32 + j] - x[b * 32 + j]) <= bound,
                             qPrintable(QString("type %1 element %2: %3 vs %4")
                                            .arg(int(type))
                                            .arg(b * 32 + j)
                                            .arg(y[b * 32 + j])
                                            .arg(x[b * 32 + j])));
            }
        }
    }

    void validSyntheticFile() {
        const qs::GgufHeader h = parse(validFile());
        QCOMPARE(int(h.tensors.size()), 2);
        QCOMPARE(h.tensors[0].byteSize, uint64_t(68));
        QCOMPARE(h.tensors[1].byteSize, uint64_t(16));
        // Version 2 has the same layout (64-bit counts).
        QCOMPARE(int(parse(gguf({}, twoTensors(), std::string(112, '\0'), 32, 2)).tensors.size()),
                 2);
    }

    // Every metadata value type, nested arrays included.
    void everyValueType() {
        std::vector<std::string> kvs;
        kvs.push_back(Bytes().str("u8").raw<uint32_t>(0).raw<uint8_t>(200).data());
        kvs.push_back(Bytes().str("i8").raw<uint32_t>(1).raw<int8_t>(-5).data());
        kvs.push_back(Bytes().str("u16").raw<uint32_t>(2).raw<uint16_t>(60000).data());
        kvs.push_back(Bytes().str("i16").raw<uint32_t>(3).raw<int16_t>(-30000).data());
        kvs.push_back(kvU32("u32", 4000000000u));
        kvs.push_back(Bytes().str("i32").raw<uint32_t>(5).raw<int32_t>(-7).data());
        kvs.push_back(kvF32("f32", 0.5f));
        kvs.push_back(Bytes().str("bool").raw<uint32_t>(7).raw<uint8_t>(1).data());
        kvs.push_back(kvString("str", "h\xc3\xa9llo"));
        kvs.push_back(Bytes().str("u64").raw<uint32_t>(10).raw<uint64_t>(1ull << 40).data());
        kvs.push_back(Bytes().str("i64").raw<uint32_t>(11).raw<int64_t>(-(1ll << 40)).data());
        kvs.push_back(Bytes().str("f64").raw<uint32_t>(12).raw<double>(0.1).data());
        // [[1, 2], [3]] as an array of arrays of int32
        kvs.push_back(Bytes()
                          .str("nested")
                          .raw<uint32_t>(9)
                          .raw<uint32_t>(9)
                          .raw<uint64_t>(2)
                          .raw<uint32_t>(5)
                          .raw<uint64_t>(2)
                          .raw<int32_t>(1)
                          .raw<int32_t>(2)
                          .raw<uint32_t>(5)
                          .raw<uint64_t>(1)
                          .raw<int32_t>(3)
                          .data());
        const qs::GgufHeader h = parse(gguf(kvs, {}, ""));
        QCOMPARE(h.find("u8")->u, uint64_t(200));
        QCOMPARE(h.find("i8")->i, int64_t(-5));
        QCOMPARE(h.find("u16")->u, uint64_t(60000));
        QCOMPARE(h.find("i16")->i, int64_t(-30000));
        QCOMPARE(h.find("u32")->u, uint64_t(4000000000u));
        QCOMPARE(h.find("i32")->i, int64_t(-7));
        QCOMPARE(h.find("f32")->f, 0.5);
        QCOMPARE(h.find("bool")->u, uint64_t(1));
        QCOMPARE(h.find("str")->s, std::string("h\xc3\xa9llo"));
        QCOMPARE(h.find("u64")->u, uint64_t(1) << 40);
        QCOMPARE(h.find("i64")->i, -(int64_t(1) << 40));
        QCOMPARE(h.find("f64")->f, 0.1);
        const qs::GgufValue& nested = *h.find("nested");
        QCOMPARE(nested.elementType, qs::GgufValueType::Array);
        QCOMPARE(int(nested.array.size()), 2);
        QCOMPARE(nested.array[0].array[1].i, int64_t(2));
        QCOMPARE(nested.array[1].array[0].i, int64_t(3));
        QCOMPARE(h.keyOrder.back(), std::string("nested"));
    }

    // Any prefix of a valid file is refused with a reason, never read past its end.
    void truncatedEverywhere() {
        const std::string full = validFile();
        for (size_t n = 0; n < full.size(); ++n) {
            const std::string r = refusal(full.substr(0, n));
            QVERIFY2(r != "accepted", std::to_string(n).c_str());
        }
        QVERIFY_REFUSED(full.substr(0, 20), "metadata_kv_count", "truncated");
    }

    void hostileHeaders() {
        const std::string data(112, '\0');
        QVERIFY_REFUSED(std::string("GGML") + validFile().substr(4), "magic", "not a GGUF");
        QVERIFY_REFUSED(gguf({}, {}, "", 32, 1), "version", "GGUF version 1");
        QVERIFY_REFUSED(gguf({}, {}, "", 32, 0x03000000), "version", "big-endian");
        // Counts: over the limit, and under the limit but more than the file can hold.
        std::string huge = validFile();
        const uint64_t tensors = uint64_t(1) << 40, kvs = uint64_t(1) << 33, some = 5000;
        std::memcpy(huge.data() + 8, &tensors, 8);
        QVERIFY_REFUSED(huge, "tensor_count", "kMaxTensorCount");
        huge = validFile();
        std::memcpy(huge.data() + 16, &kvs, 8);
        QVERIFY_REFUSED(huge, "metadata_kv_count", "kMaxKvCount");
        std::memcpy(huge.data() + 16, &some, 8);
        QVERIFY_REFUSED(huge, "metadata_kv_count", "cannot fit");
        huge = validFile();
        std::memcpy(huge.data() + 8, &some, 8);
        QVERIFY_REFUSED(huge, "tensor_count", "cannot fit");
        // Strings and arrays.
        QVERIFY_REFUSED(
            gguf({Bytes().str("k").raw<uint32_t>(8).raw<uint64_t>(1ull << 60).data()}, {}, ""), "k",
            "kMaxStringBytes");
        QVERIFY_REFUSED(
            gguf({Bytes().str("k").raw<uint32_t>(8).raw<uint64_t>(1000).data()}, {}, ""), "k",
            "truncated");
        QVERIFY_REFUSED(gguf({Bytes()
                                  .str("k")
                                  .raw<uint32_t>(9)
                                  .raw<uint32_t>(4)
                                  .raw<uint64_t>(1ull << 50)
                                  .data()},
                             {}, ""),
                        "k", "kMaxArrayLength");
        QVERIFY_REFUSED(
            gguf({Bytes().str("k").raw<uint32_t>(9).raw<uint32_t>(4).raw<uint64_t>(1 << 20).data()},
                 {}, ""),
            "k", "cannot fit");
        Bytes deep;
        deep.str("k").raw<uint32_t>(9);
        for (int level = 0; level < 6; ++level)
            deep.raw<uint32_t>(9).raw<uint64_t>(1);
        QVERIFY_REFUSED(gguf({deep.data()}, {}, std::string(64, '\0')), "k[0][0][0][0]",
                        "kMaxArrayDepth");
        QVERIFY_REFUSED(gguf({Bytes().str("k").raw<uint32_t>(13).raw<uint32_t>(0).data()}, {}, ""),
                        "k", "unknown GGUF value type 13");
        QVERIFY_REFUSED(gguf({Bytes().str("k").raw<uint32_t>(7).raw<uint8_t>(2).data()}, {}, ""),
                        "k", "neither 0 nor 1");
        QVERIFY_REFUSED(gguf({kvU32("k", 1), kvU32("k", 2)}, {}, ""), "k", "duplicate");
        QVERIFY_REFUSED(gguf({kvU32("", 1)}, {}, ""), "metadata[0]", "empty metadata key");
        // Alignment.
        QVERIFY_REFUSED(gguf({kvU32("general.alignment", 48)}, twoTensors(), data, 16),
                        "general.alignment", "power of two");
        QVERIFY_REFUSED(gguf({kvU32("general.alignment", 0)}, twoTensors(), data),
                        "general.alignment", "power of two");
        QVERIFY_REFUSED(gguf({kvF32("general.alignment", 32)}, twoTensors(), data),
                        "general.alignment", "uint32");
    }

    void hostileTensorInfos() {
        const std::string data(112, '\0');
        auto with = [&](const Tensor& t) { return gguf({}, {twoTensors()[0], t}, data); };
        QVERIFY_REFUSED(with({"b.weight", {4}, 0, 100}), "b.weight.offset",
                        "not a multiple of the alignment 32");
        QVERIFY_REFUSED(with({"b.weight", {4}, 0, 64}), "b.weight.offset", "overlaps tensor");
        QVERIFY_REFUSED(with({"b.weight", {4}, 0, 128}), "b.weight.offset",
                        "outside the data section");
        QVERIFY_REFUSED(with({"b.weight", {4}, 0, 1ull << 63}), "b.weight.offset",
                        "outside the data section");
        QVERIFY_REFUSED(with({"b.weight", {64}, 4, 96}), "b.weight.type", "ggml type 4 is unknown");
        QVERIFY_REFUSED(with({"b.weight", {64}, 99, 96}), "b.weight.type",
                        "ggml type 99 is unknown");
        QVERIFY_REFUSED(with({"b.weight", {4, 1, 1, 1, 1}, 0, 96}), "b.weight.n_dims", "kMaxDims");
        QVERIFY_REFUSED(with({"b.weight", {}, 0, 96}), "b.weight.n_dims", "0 dimensions");
        QVERIFY_REFUSED(with({"b.weight", {4, 0}, 0, 96}), "b.weight.dims[1]", "not in [1");
        QVERIFY_REFUSED(with({"b.weight", {1ull << 40, 1ull << 40}, 0, 96}), "b.weight.dims",
                        "overflows");
        QVERIFY_REFUSED(with({"b.weight", {1ull << 61, 2}, 0, 96}), "b.weight.dims",
                        "byte size overflows");
        QVERIFY_REFUSED(with({"b.weight", {16}, 8, 96}), "b.weight.dims",
                        "not a multiple of Q8_0's block of 32");
        QVERIFY_REFUSED(with({"a.weight", {4}, 0, 96}), "a.weight", "duplicate tensor name");
        QVERIFY_REFUSED(with({std::string(64, 'n'), {4}, 0, 96}), "tensor_infos[1].name",
                        "kMaxNameBytes");
        QVERIFY_REFUSED(with({"", {4}, 0, 96}), "tensor_infos[1].name", "empty tensor name");
        // A header whose aligned end lies past the file while tensors are declared.
        QVERIFY_REFUSED(gguf({}, {{"a", {1}, 0, 0}}, "").substr(0, 60), "data section",
                        "past the end");
    }

    // A type ggml defines but Quantscope does not decode parses (its size is known) and is
    // refused by name when its values are asked for.
    void unsupportedTypeRefusedByName() {
        const std::string bytes =
            gguf({}, {{"blk.0.attn_q.weight", {256, 1}, 13, 0}}, std::string(176, '\0'));
        const QString path = qs::test::tempDir("k") + "/k.gguf";
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes.data(), qint64(bytes.size()));
        f.close();
        const auto file = qs::GgufFile::open(path.toStdString());
        QCOMPARE(file->header().tensors[0].byteSize, uint64_t(176));
        try {
            file->dequantize(file->header().tensors[0]);
            QFAIL("Q5_K decoded");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("blk.0.attn_q.weight"));
            QCOMPARE(e.reason(), std::string("ggml type 13 (Q5_K) not supported"));
        }
    }
};

QS_TEST_GUILESS_MAIN(TestGgufFile)
#include "tst_gguffile.moc"
