// The GGUF exporter against llama.cpp's own converter output for stories260K
// (../shared/models/stories260K-gguf): every F32 tensor byte-identical (names, dims, q/k row
// permutation) and the sentencepiece tokenizer arrays equal; ggml's block formulas for
// Q8_0/Q4_0/Q4_1 checked element by element. Quantized layers: the file's codes are the
// engine's bit for bit (round to nearest and GPTQ), scales differ by f16 rounding only; plans a
// type cannot hold are refused before any work. K-quants on a synthetic Llama whose rows are
// multiples of 256, with llama.cpp's fallbacks for the rows that are not.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/ExportFormat.h"
#include "export/GgufExporter.h"
#include "io/Checkpoint.h"
#include "io/GgmlKQuants.h"
#include "io/GgufTensorNames.h"
#include "quant/SchemeRegistry.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
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
    // stories260K quantized with `recipe` (calibration from the shared data), plans kept.
    qs::QuantizationOutcome quantize(qs::Recipe recipe, const std::string& type,
                                     const QString& out) {
        recipe.calibration.dataPath =
            qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        recipe.calibration.numSamples = 4;
        recipe.calibration.seqLen = 128;
        qs::RunRequest req;
        req.modelDir = qs::test::sharedPath("models/stories260K").toStdString();
        req.recipe = recipe;
        req.outDir = out.toStdString();
        req.exportFormats = {"gguf"};
        req.exportOptions["gguf_type"] = type;
        req.keepPlans = true;
        return qs::runQuantization(req);
    }

    // One quantized linear of the file against the engine's plan. Codes: equal to the engine's
    // (shifted by the block's offset) element by element. d (and Q4_1's m) are the f16 of the
    // engine's scale (and of -(zp + o) * scale): f16 round to nearest moves a value by at most
    // 2^-11 of it (normal halves) or 2^-25 (subnormal spacing 2^-24 below 2^-14). The
    // dequantized values then differ from the engine's by |q'| * |d16 - s| + |m16 - m| plus
    // one fp32 rounding (2^-24 relative) per product or sum on either side. `worst`: the largest
    // difference relative to the block's scale.
    void checkCodes(const Gguf& g, const qs::LayerPlan& plan, int64_t heads, uint32_t type,
                    double& worst) {
        const std::string name = qs::ggufNameOfHfTensor(plan.name + ".weight");
        const Gguf::Tensor& t = g.tensors.at(name);
        const int64_t out = plan.shape[0], in = plan.shape[1];
        QCOMPARE(t.type, type);
        const qs::quant::QuantizedTensor& q = *plan.weight.codes;
        const at::Tensor codes = q.codes.to(at::kInt).reshape({out, in}).contiguous();
        const at::Tensor scale = q.params.scale.to(at::kFloat).reshape({-1}).contiguous();
        const at::Tensor zp = q.params.zeroPoint.defined()
                                  ? q.params.zeroPoint.to(at::kInt).reshape({-1}).contiguous()
                                  : at::zeros_like(scale, at::kInt);
        const at::Tensor deq = plan.weight.dequantized.to(at::kFloat).contiguous();
        at::Tensor rowOf = at::arange(out, at::kLong); // file row -> engine row
        if (heads)
            rowOf = rowOf.reshape({heads, 2, out / heads / 2}).transpose(1, 2).reshape({-1});
        const int64_t perRow = scale.numel() == 1 ? 0 : scale.numel() / out;
        const int offset = plan.scheme->weight.dtype == qs::quant::DataType::Int4 ? 8 : 0;
        const uint64_t blockBytes = type == 8 ? 34 : type == 2 ? 18 : 20;
        const char* data = g.data(name);
        auto f16Bound = [](float v) { return std::max(std::ldexp(std::fabs(v), -11), 0x1p-25f); };
        for (int64_t r = 0; r < out; ++r) {
            const int64_t er = rowOf[r].item<int64_t>();
            for (int64_t c = 0; c < in; ++c) {
                const int64_t si = perRow == 0 ? 0 : er * perRow + c / (in / perRow);
                const float s = scale[si].item<float>();
                const int z = zp[si].item<int>();
                const int code = codes[er][c].item<int>();
                const char* block = data + (r * (in / 32) + c / 32) * blockBytes;
                const float d16 = half(block);
                if (c % 32 == 0) {
                    QCOMPARE(uint16_t(c10::Half(s).x), *reinterpret_cast<const uint16_t*>(block));
                    QVERIFY(std::fabs(d16 - s) <= f16Bound(s));
                }
                int stored, shifted; // the file's code; the engine's (code - zp) it stands for
                float fileValue, m32 = 0, m16 = 0;
                if (type == 8) {
                    stored = int8_t(block[2 + c % 32]);
                    QCOMPARE(stored, code - z);
                    shifted = stored;
                    fileValue = stored * d16;
                } else {
                    const uint8_t byte = uint8_t(block[(type == 2 ? 2 : 4) + c % 16]);
                    stored = c % 32 < 16 ? (byte & 15) : (byte >> 4);
                    QCOMPARE(stored, type == 2 ? code - z + 8 : code + offset);
                    shifted = type == 2 ? stored - 8 : stored;
                    if (type == 3) {
                        m32 = -(float(z + offset) * s);
                        m16 = half(block + 2);
                        QVERIFY(std::fabs(m16 - m32) <= f16Bound(m32));
                        fileValue = stored * d16 + m16;
                    } else {
                        fileValue = shifted * d16;
                    }
                }
                const float engine = deq[er][c].item<float>();
                const double bound = std::abs(shifted) * std::fabs(d16 - s) + std::fabs(m16 - m32) +
                                     0x1p-24 * (std::fabs(m32) + std::fabs(shifted * d16) +
                                                std::fabs(fileValue) + std::fabs(engine));
                const double diff = std::fabs(double(fileValue) - engine);
                if (diff > bound)
                    qFatal("%s[%lld, %lld]: file %.9g, engine %.9g, bound %.3g", name.c_str(),
                           (long long)r, (long long)c, fileValue, engine, bound);
                worst = std::max(worst, diff / std::fabs(s));
            }
        }
    }

    // Every quantized linear of the outcome checked, counted in `checked`.
    void checkAll(const Gguf& g, const qs::QuantizationOutcome& o, uint32_t type, int& checked,
                  double& worst) {
        checked = 0;
        for (const auto& block : o.plans)
            for (const qs::LayerPlan& p : block) {
                if (!p.weight.codes)
                    continue;
                const std::string n = qs::ggufNameOfHfTensor(p.name + ".weight");
                if (p.shape[1] % 32 != 0) { // ffn_down of stories260K (172): F32, exact values
                    QCOMPARE(g.tensors.at(n).type, 0u);
                    const at::Tensor d = p.weight.dequantized.to(at::kFloat).contiguous();
                    QVERIFY(std::memcmp(g.data(n), d.data_ptr<float>(), d.nbytes()) == 0);
                    continue;
                }
                const int64_t heads = p.kind == "q_proj" ? 8 : p.kind == "k_proj" ? 4 : 0;
                checkCodes(g, p, heads, type, worst);
                if (QTest::currentTestFailed())
                    return;
                ++checked;
            }
    }

    QString exportModel(const std::string& type) {
        qs::QuantFlags flags;
        flags.quantScheme = "uint4_wo_32";
        flags.excludeLayers = {"*"}; // nothing quantized: the float weights as they are
        qs::RunRequest req;
        req.modelDir = qs::test::sharedPath("models/stories260K").toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        const QString out = qs::test::tempDir(QString::fromStdString(type)) + "/gguf";
        req.outDir = out.toStdString();
        req.exportFormats = {"gguf"};
        req.exportOptions["gguf_type"] = type;
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

    // BF16 is ggml_compute_fp32_to_bf16: round to nearest even on the upper half, NaN made
    // quiet, subnormals rounded (not flushed), overflow to infinity. Hand-picked edges, then
    // random values against c10::BFloat16's own rounding, then a whole export against the f32
    // export of the same model, element for element.
    void bf16Formula() {
        const std::vector<std::pair<uint32_t, uint16_t>> cases = {
            {0x3f800000u, 0x3f80}, // 1
            {0x3f808000u, 0x3f80}, // 1 + 2^-8: a tie, even below
            {0x3f818000u, 0x3f82}, // 1 + 3 * 2^-8: a tie, odd below: up
            {0x3f808001u, 0x3f81}, // just above the tie
            {0xbf80ffffu, 0xbf81}, // negative, above half
            {0x7f800000u, 0x7f80}, // inf
            {0xff800000u, 0xff80}, // -inf
            {0x7f7fffffu, 0x7f80}, // the largest float rounds to inf
            {0x7fa00001u, 0x7fe0}, // signalling NaN: quiet bit set
            {0xffc00000u, 0xffc0}, // quiet NaN keeps its sign
            {0x00018000u, 0x0002}, // subnormal tie, odd below: up (not flushed)
            {0x00008000u, 0x0000}, // subnormal tie, even below
        };
        for (const auto& [in, out] : cases) {
            float f;
            std::memcpy(&f, &in, 4);
            const std::string b = qs::ggmlQuantizeRow(&f, 1, qs::GgmlType::BF16);
            QCOMPARE(b.size(), size_t(2));
            uint16_t got;
            std::memcpy(&got, b.data(), 2);
            QVERIFY2(got == out, qPrintable(QStringLiteral("0x%1 -> 0x%2, expected 0x%3")
                                                .arg(in, 8, 16, QChar('0'))
                                                .arg(got, 4, 16, QChar('0'))
                                                .arg(out, 4, 16, QChar('0'))));
        }
        std::mt19937 rng(11);
        std::normal_distribution<float> dist(0.0f, 3.0f);
        std::vector<float> x(4096);
        for (float& v : x)
            v = dist(rng);
        const std::string row =
            qs::ggmlQuantizeRow(x.data(), int64_t(x.size()), qs::GgmlType::BF16);
        QCOMPARE(uint64_t(row.size()), qs::ggmlRowBytes(int64_t(x.size()), qs::GgmlType::BF16));
        for (size_t i = 0; i < x.size(); ++i) {
            uint16_t got;
            std::memcpy(&got, row.data() + 2 * i, 2);
            QCOMPARE(got, c10::BFloat16(x[i]).x);
        }

        const Gguf b(exportModel("bf16"));
        const Gguf f(exportModel("f32"));
        uint32_t ftype = 0;
        std::memcpy(&ftype, b.kv.at("general.file_type").data(), 4);
        QCOMPARE(ftype, 32u); // LLAMA_FTYPE_MOSTLY_BF16
        int compared = 0;
        for (const auto& [name, t] : b.tensors) {
            const Gguf::Tensor& ref = f.tensors.at(name);
            QCOMPARE(t.dims, ref.dims);
            if (t.dims.size() == 1) {
                QCOMPARE(t.type, 0u); // norms stay F32
                continue;
            }
            QCOMPARE(t.type, 30u);
            uint64_t n = 1;
            for (uint64_t d : t.dims)
                n *= d;
            const auto* w = reinterpret_cast<const float*>(f.data(name));
            const auto* h = reinterpret_cast<const uint16_t*>(b.data(name));
            for (uint64_t i = 0; i < n; ++i)
                if (h[i] != c10::BFloat16(w[i]).x)
                    QFAIL(qPrintable(QString::fromStdString(name) + " element " +
                                     QString::number(i)));
            ++compared;
        }
        QCOMPARE(compared, 36); // 7 linears x 5 blocks + token_embd
    }

    void quantizedFileLayout() {
        const Gguf q(exportModel("q8_0"));
        QCOMPARE(q.tensors.at("blk.0.attn_q.weight").type, 8u);
        QCOMPARE(q.tensors.at("blk.0.ffn_down.weight").type, 0u); // 172 per row: F32 fallback
        QCOMPARE(q.tensors.at("blk.0.attn_norm.weight").type, 0u);
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::ggmlTypeFromName("q5_k"));
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::ggufTypeFromName("q5_0")); // fallback only
        // The names the GUI and the CLI help offer are the ones the exporter takes.
        for (const std::string& name : qs::ggufTypeNames())
            qs::ggufTypeFromName(name);
        QCOMPARE(qs::ggufTypeNames().front(), std::string("auto"));
        QVERIFY(!qs::ggufTypeFromName("AUTO"));
    }

    // int4 symmetric per group of 32, round to nearest: auto writes Q4_0 with the engine's codes;
    // q4_1 (m = -8 d) and q8_0 (code - zp as int8) hold the same codes exactly too.
    void int4SymmetricCodesAsTheEngineChose() {
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int4_wo_32");
        recipe.exclude = {"*down_proj"}; // 172 inputs: no groups of 32 (float, F32 in the file)
        for (const auto& [type, ggml] : std::vector<std::pair<std::string, uint32_t>>{
                 {"auto", 2}, {"q4_0", 2}, {"q4_1", 3}, {"q8_0", 8}}) {
            const QString out = qs::test::tempDir(QString::fromStdString("codes-" + type));
            const qs::QuantizationOutcome o = quantize(recipe, type, out + "/gguf");
            const Gguf g(out + "/gguf/model.gguf");
            int checked = 0;
            double worst = 0;
            checkAll(g, o, ggml, checked, worst);
            if (QTest::currentTestFailed())
                return;
            QCOMPARE(checked, 5 * 6); // q, k, v, o, gate, up of 5 blocks
            qInfo("%s: largest |file - engine| / scale = %.3g", type.c_str(), worst);
            QCOMPARE(g.kv.at("general.file_type").size(), size_t(4));
        }
    }

    // GPTQ's and AWQ's codes (uint4 asymmetric, groups of 64) go through the same path: Q4_1
    // with m = -zp * scale (AWQ: the codes of the rescaled weight, whose 1/s went into the norms
    // the file holds).
    void algorithmCodesAsQ41() {
        for (const std::string algo : {"gptq", "awq"}) {
            qs::Recipe recipe;
            recipe.global = qs::quant::resolveScheme("uint4_wo_64");
            recipe.exclude = {"*down_proj"};
            if (algo == "gptq")
                recipe.algorithms.push_back(
                    {"gptq", {{"desc_act", false}, {"static_groups", false}}});
            else
                recipe.algorithms.push_back({"awq", nlohmann::json::object()});
            const QString out = qs::test::tempDir(QString::fromStdString("codes-" + algo));
            const qs::QuantizationOutcome o = quantize(recipe, "auto", out + "/gguf");
            int transformed = 0;
            for (const auto& block : o.plans)
                for (const qs::LayerPlan& p : block)
                    transformed += !p.transforms.empty();
            QVERIFY2(transformed >= 5 * 6, algo.c_str());
            const Gguf g(out + "/gguf/model.gguf");
            int checked = 0;
            double worst = 0;
            checkAll(g, o, 3, checked, worst);
            if (QTest::currentTestFailed())
                return;
            QCOMPARE(checked, 5 * 6);
            qInfo("%s uint4 q4_1: largest |file - engine| / scale = %.3g", algo.c_str(), worst);
        }
    }

    // int8 symmetric per output channel: Q8_0, the channel's scale in each of its blocks.
    void int8PerChannelAsQ80() {
        qs::Recipe recipe;
        qs::quant::QuantScheme scheme;
        scheme.weight.dtype = qs::quant::DataType::Int8;
        scheme.weight.granularity = qs::quant::Granularity::PerChannel;
        scheme.weight.chAxis = 0;
        scheme.weight.symmetric = true;
        recipe.global = scheme;
        const QString out = qs::test::tempDir("codes-int8");
        const qs::QuantizationOutcome o = quantize(recipe, "auto", out + "/gguf");
        const Gguf g(out + "/gguf/model.gguf");
        int checked = 0;
        double worst = 0;
        checkAll(g, o, 8, checked, worst);
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(checked, 5 * 6); // down_proj (172 inputs, per channel): F32, checked apart
        // Unquantized tensors under auto keep the source's precision (F32 here).
        QCOMPARE(g.tensors.at("token_embd.weight").type, 0u);
    }

    // A plan the asked type cannot hold without re-rounding is refused before any block runs,
    // naming the layer, the reason and the fix; nothing is written.
    void mismatchRefusedBeforeWork() {
        struct Case {
            std::string scheme;
            int group; // legacy schemes' group size
            std::string type, expect;
        };
        for (const Case& c :
             std::vector<Case>{{"uint4_wo_32", 0, "q4_0", "no exact q4_0 form"},
                               {"int4_wo_32", 0, "q4_k", "no exact q4_k form"},
                               {"w_int4_per_group_sym", 16, "auto", "groups of 16"}}) {
            qs::Recipe recipe;
            recipe.global = qs::quant::resolveScheme(c.scheme, c.group);
            recipe.exclude = {"*down_proj"};
            const QString out =
                qs::test::tempDir(QString::fromStdString("refused-" + c.scheme)) + "/gguf";
            try {
                quantize(recipe, c.type, out);
                QFAIL(("wrote " + c.scheme + " as " + c.type).c_str());
            } catch (const qs::Error& e) {
                const std::string what = e.what();
                QVERIFY2(what.find("model.layers.0.self_attn.q_proj") != std::string::npos,
                         e.what());
                QVERIFY2(what.find(c.expect) != std::string::npos, e.what());
                QVERIFY2(what.find("--gguf-type") != std::string::npos, e.what());
            }
            QVERIFY(!QFileInfo::exists(out));
        }
    }

    // K-quants on a synthetic Llama (hidden 256): every 2-D weight with rows of 256 is Q4_K /
    // Q6_K; ffn_down's rows (intermediate 544 = 2*256 + 32) take llama.cpp's fallback (Q5_0 /
    // Q8_0); norms F32. Sizes: rows x the type's row bytes, at 32-byte aligned offsets. The
    // bytes of an unpermuted weight equal the K-quantizer's on the source row.
    void kQuantsOnSyntheticLlama() {
        qs::SyntheticModelOptions opt;
        opt.outDir = (qs::test::tempDir("gguf-kquant") + "/model").toStdString();
        opt.hiddenSize = 256;
        opt.intermediateSize = 544;
        opt.numLayers = 2;
        opt.numHeads = 4;
        opt.numKvHeads = 2;
        opt.vocabSize = 512; // stories260K's sentencepiece model: GGUF needs tokenizer.model
        opt.maxPositions = 128;
        qs::writeSyntheticModel(opt);
        QVERIFY(QFile::copy(qs::test::sharedPath("models/stories260K/tokenizer.model"),
                            QString::fromStdString(opt.outDir) + "/tokenizer.model"));
        for (const auto& [type, main, fallback] :
             std::vector<std::tuple<std::string, qs::GgmlType, qs::GgmlType>>{
                 {"q4_k", qs::GgmlType::Q4_K, qs::GgmlType::Q5_0},
                 {"q6_k", qs::GgmlType::Q6_K, qs::GgmlType::Q8_0}}) {
            qs::QuantFlags flags;
            flags.quantScheme = "uint4_wo_32";
            flags.excludeLayers = {"*"}; // nothing quantized by the engine: ggml's K-quants
            qs::RunRequest req;
            req.modelDir = opt.outDir;
            req.recipe = qs::recipeFromFlags(flags);
            const QString out = qs::test::tempDir(QString::fromStdString("kq-" + type)) + "/gguf";
            req.outDir = out.toStdString();
            req.exportFormats = {"gguf"};
            req.exportOptions["gguf_type"] = type;
            qs::runQuantization(req);
            const Gguf g(out + "/model.gguf");
            QCOMPARE(int(g.tensors.size()), 1 + 2 * 9 + 2); // embd, 9 per block, norm, output
            std::map<uint64_t, std::pair<std::string, uint64_t>> byOffset; // offset -> bytes
            for (const auto& [name, t] : g.tensors) {
                uint64_t rows = 1;
                for (size_t i = 1; i < t.dims.size(); ++i)
                    rows *= t.dims[i];
                qs::GgmlType expect = qs::GgmlType::F32;
                if (t.dims.size() == 2)
                    expect = name.find("ffn_down") != std::string::npos ? fallback : main;
                QVERIFY2(t.type == uint32_t(expect), name.c_str());
                QCOMPARE(t.offset % 32, uint64_t(0));
                byOffset[t.offset] = {name, rows * qs::ggmlRowBytes(int64_t(t.dims[0]), expect)};
            }
            for (auto it = byOffset.begin(); std::next(it) != byOffset.end(); ++it) {
                const uint64_t padded = (it->second.second + 31) / 32 * 32;
                QVERIFY2(std::next(it)->first - it->first == padded, it->second.first.c_str());
            }
            const auto last = std::prev(byOffset.end());
            QCOMPARE(uint64_t(g.bytes.size()) - g.dataStart - last->first,
                     (last->second.second + 31) / 32 * 32);
            QCOMPARE(g.tensors.at("blk.1.ffn_up.weight").dims, (std::vector<uint64_t>{256, 544}));
            // ffn_up [544, 256] (not permuted): each row is the K-quantizer's bytes of the
            // source row (F32 synthetic checkpoint).
            const auto source = qs::Checkpoint::open(opt.outDir);
            const qs::TensorInfo& info = source->info("model.layers.1.mlp.up_proj.weight");
            const auto* w = reinterpret_cast<const float*>(
                source->fileOf("model.layers.1.mlp.up_proj.weight").data(info));
            const uint64_t rowBytes = qs::ggmlRowBytes(256, main);
            for (int r = 0; r < 544; r += 97) {
                const std::string expect = qs::ggmlQuantizeRow(w + r * 256, 256, main);
                QVERIFY(std::memcmp(g.data("blk.1.ffn_up.weight") + r * rowBytes, expect.data(),
                                    rowBytes) == 0);
            }
            // general.file_type: LLAMA_FTYPE_MOSTLY_Q4_K_S (14) / Q6_K (18).
            uint32_t ftype;
            std::memcpy(&ftype, g.kv.at("general.file_type").data(), 4);
            QCOMPARE(ftype, main == qs::GgmlType::Q4_K ? 14u : 18u);
        }
    }

    // stories260K (dim 64) has no row K-quants fit: rows of 64 take the fallback, 172 F32.
    void kQuantsFallBackOnStories() {
        const Gguf q(exportModel("q4_k"));
        QCOMPARE(q.tensors.at("blk.0.attn_q.weight").type, 6u);   // Q5_0
        QCOMPARE(q.tensors.at("token_embd.weight").type, 6u);     // rows of 64
        QCOMPARE(q.tensors.at("blk.0.ffn_down.weight").type, 0u); // 172: F32
        const Gguf q6(exportModel("q6_k"));
        QCOMPARE(q6.tensors.at("blk.0.attn_q.weight").type, 8u); // Q8_0
    }
};

QS_TEST_GUILESS_MAIN(TestGgufExport)
#include "tst_ggufexport.moc"
