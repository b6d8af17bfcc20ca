// The GGUF exporter against llama.cpp's own converter output for stories260K
// (../shared/models/stories260K-gguf): every F32 tensor byte-identical (names, dims, q/k row
// permutation) and the sentencepiece tokenizer arrays equal; ggml's block formulas for
// Q8_0/Q4_0/Q4_1 checked element by element.
#include "TestSupport.h"

#include "calib/QuantizationRun.h"
#include "export/ExportFormat.h"
#include "export/GgufExporter.h"
#include "recipe/RecipeFlags.h"
#include "util/Error.h"

#include <c10/util/Half.h>

#include <QFile>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>

namespace {

// A small GGUF v3 reader for the test (the metadata it needs and tensor bytes).
struct Gguf {
    std::map<std::string, std::string> kv; // scalar/string values as text, arrays as raw bytes
    struct Tensor {
        std::vector<uint64_t> dims;
        uint32_t type;
        uint64_t offset;
    };
    std::map<std::string, Tensor> tensors;
    QByteArray bytes;
    uint64_t dataStart = 0;

    explicit Gguf(const QString& path) {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            qFatal("cannot open %s", qPrintable(path));
        bytes = f.readAll();
        uint64_t o = 4;
        auto rd = [&](auto& v) {
            std::memcpy(&v, bytes.constData() + o, sizeof v);
            o += sizeof v;
        };
        auto str = [&]() {
            uint64_t n;
            rd(n);
            std::string s(bytes.constData() + o, n);
            o += n;
            return s;
        };
        static const std::map<uint32_t, int> size = {{0, 1},  {1, 1},  {2, 2}, {3, 2},
                                                     {4, 4},  {5, 4},  {6, 4}, {7, 1},
                                                     {10, 8}, {11, 8}, {12, 8}};
        std::function<std::string(uint32_t)> value = [&](uint32_t t) -> std::string {
            if (t == 8)
                return str();
            if (t == 9) {
                uint32_t at;
                uint64_t n;
                rd(at);
                rd(n);
                std::string all;
                for (uint64_t i = 0; i < n; ++i)
                    all += value(at) + '\x1f';
                return all;
            }
            std::string raw(bytes.constData() + o, size.at(t));
            o += size.at(t);
            return raw;
        };
        uint32_t version;
        uint64_t nt, nk;
        rd(version);
        rd(nt);
        rd(nk);
        for (uint64_t i = 0; i < nk; ++i) {
            const std::string k = str();
            uint32_t t;
            rd(t);
            kv[k] = value(t);
        }
        for (uint64_t i = 0; i < nt; ++i) {
            const std::string n = str();
            uint32_t nd;
            rd(nd);
            Tensor t;
            t.dims.resize(nd);
            for (auto& d : t.dims)
                rd(d);
            rd(t.type);
            rd(t.offset);
            tensors[n] = t;
        }
        dataStart = (o + 31) / 32 * 32;
    }
    const char* data(const std::string& n) const {
        return bytes.constData() + dataStart + tensors.at(n).offset;
    }
};

float half(const char* p) {
    c10::Half h;
    std::memcpy(&h.x, p, 2);
    return float(h);
}

} // namespace

class TestGgufExport : public QObject {
    Q_OBJECT

private:
    QString exportModel(const std::string& type) {
        qs::QuantFlags flags;
        flags.quantScheme = "uint4_wo_32";
        flags.excludeLayers = {"*"}; // nothing quantized: the float weights as they are
        qs::QuantizationRequest req;
        req.modelDir = qs::test::sharedPath("models/stories260K").toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        const QString out = qs::test::tempDir(QString::fromStdString(type)) + "/gguf";
        req.outDir = out.toStdString();
        req.exportFormats = {"gguf"};
        req.ggufType = type;
        qs::runQuantization(req);
        return out + "/model.gguf";
    }

private Q_SLOTS:
    // Deliberate differences from that (older) file: no output.weight (the model ties it to
    // token_embd, as current llama.cpp writes tied models), llama.context_length from
    // config.json (512; the file says 2048), general.alignment/file_type and rope.freq_base
    // written, no padding/separator ids.
    void f32EqualsLlamaCpp() {
        const Gguf ours(exportModel("f32"));
        const Gguf ref(qs::test::sharedPath("models/stories260K-gguf/stories260K.gguf"));
        int compared = 0;
        for (const auto& [name, t] : ref.tensors) {
            if (name == "output.weight")
                continue;
            QVERIFY2(ours.tensors.count(name), name.c_str());
            const Gguf::Tensor& o = ours.tensors.at(name);
            QVERIFY2(o.dims == t.dims && o.type == 0 && t.type == 0, name.c_str());
            uint64_t n = 4;
            for (uint64_t d : t.dims)
                n *= d;
            QVERIFY2(std::memcmp(ours.data(name), ref.data(name), n) == 0, name.c_str());
            ++compared;
        }
        QCOMPARE(compared, 47);
        QCOMPARE(int(ours.tensors.size()), 47);
        for (const char* k :
             {"general.architecture", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
              "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
              "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
              "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
              "llama.attention.head_count_kv", "llama.block_count", "llama.rope.dimension_count",
              "llama.attention.layer_norm_rms_epsilon"})
            QVERIFY2(ours.kv.at(k) == ref.kv.at(k), k);
    }

    // Each block decodes to within half a step of the input, with ggml's scale definitions.
    void blockFormulas() {
        std::mt19937 rng(7);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> x(256);
        for (float& v : x)
            v = dist(rng);
        x[5] = 0.0f;
        const std::string q8 = qs::ggmlQuantizeRow(x.data(), 256, qs::GgmlType::Q8_0);
        const std::string q40 = qs::ggmlQuantizeRow(x.data(), 256, qs::GgmlType::Q4_0);
        const std::string q41 = qs::ggmlQuantizeRow(x.data(), 256, qs::GgmlType::Q4_1);
        QCOMPARE(uint64_t(q8.size()), qs::ggmlRowBytes(256, qs::GgmlType::Q8_0));
        QCOMPARE(q40.size(), size_t(8 * 18));
        QCOMPARE(q41.size(), size_t(8 * 20));
        for (int b = 0; b < 8; ++b) {
            const float* v = x.data() + 32 * b;
            float amax = 0, maxv = 0, mn = v[0], mx = v[0];
            for (int j = 0; j < 32; ++j) {
                if (std::fabs(v[j]) > amax) {
                    amax = std::fabs(v[j]);
                    maxv = v[j];
                }
                mn = std::min(mn, v[j]);
                mx = std::max(mx, v[j]);
            }
            // Q8_0: d = fp16(amax / 127), q = round(x / d) with the fp32 d.
            const char* p8 = q8.data() + 34 * b;
            QCOMPARE(half(p8), float(c10::Half(amax / 127)));
            for (int j = 0; j < 32; ++j)
                QCOMPARE(int(int8_t(p8[2 + j])), int(std::round(v[j] * (1.0f / (amax / 127)))));
            // Q4_0: d = max / -8 (signed max), nibble j = low of byte j, j+16 = high.
            const char* p4 = q40.data() + 18 * b;
            const float d0 = maxv / -8;
            QCOMPARE(half(p4), float(c10::Half(d0)));
            for (int j = 0; j < 32; ++j) {
                const uint8_t byte = uint8_t(p4[2 + (j % 16)]);
                const int q = j < 16 ? (byte & 15) : (byte >> 4);
                QCOMPARE(q, std::min(15, int(int8_t(v[j] * (1.0f / d0) + 8.5f))));
            }
            // Q4_1: d = (max - min) / 15, m = min.
            const char* p1 = q41.data() + 20 * b;
            const float d1 = (mx - mn) / 15;
            QCOMPARE(half(p1), float(c10::Half(d1)));
            QCOMPARE(half(p1 + 2), float(c10::Half(mn)));
            for (int j = 0; j < 32; ++j) {
                const uint8_t byte = uint8_t(p1[4 + (j % 16)]);
                const int q = j < 16 ? (byte & 15) : (byte >> 4);
                QVERIFY(std::fabs(mn + q * d1 - v[j]) <= d1 / 2 * 1.0001f);
            }
        }
    }

    void quantizedFileLayout() {
        const Gguf q(exportModel("q8_0"));
        QCOMPARE(q.tensors.at("blk.0.attn_q.weight").type, 8u);
        QCOMPARE(q.tensors.at("blk.0.ffn_down.weight").type, 0u); // 172 per row: F32 fallback
        QCOMPARE(q.tensors.at("blk.0.attn_norm.weight").type, 0u);
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::ggmlTypeFromName("q5_k"));
        // The names the GUI and the CLI help offer are the ones the exporter takes.
        for (const std::string& name : qs::ggufTypeNames())
            qs::ggmlTypeFromName(name);
    }
};

QTEST_GUILESS_MAIN(TestGgufExport)
#include "tst_ggufexport.moc"
