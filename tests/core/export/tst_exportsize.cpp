// Size accounting (export/ExportSize.h): (1) against the hand formula of each scheme's storage on
// a synthetic model whose every linear fits every scheme; (2) against the files the exporters
// write: stories260K and a BF16 synthetic model quantized by `quantscope-cli quantize` to quark,
// gguf and onnx, every predicted tensor compared with the file's, and the file sizes.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/ExportSize.h"
#include "export/OnnxExporter.h"
#include "io/GgmlTypes.h"
#include "io/GgufFile.h"
#include "io/SafetensorsFile.h"
#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"
#include "util/Protobuf.h"

#include <QFileInfo>
#include <QtTest>

#include <fstream>
#include <functional>
#include <map>

using namespace qs;

namespace {

quant::QuantScheme int8PerChannel() {
    quant::QuantScheme s;
    s.weight = quant::QuantSpec::defaults(quant::DataType::Int8);
    s.weight.granularity = quant::Granularity::PerChannel;
    s.weight.chAxis = 0;
    return s;
}

Recipe recipeOf(const quant::QuantScheme& scheme) {
    Recipe r;
    r.global = scheme;
    return r;
}

// Bytes of every block linear's weight as a format stores it, from the hand formula of its
// layout for a weight [out, in] (docs/exporters.md, ../shared/docs/formats.md); -1: refused.
using Formula = std::function<int64_t(int64_t out, int64_t in)>;

int64_t ceilDiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

// name -> (size, dtype) of each tensor of a safetensors file, a GGUF file or an ONNX graph.
struct FileTensor {
    uint64_t bytes = 0;
    std::string dtype;
};

std::map<std::string, FileTensor> safetensorsTensors(const QString& path) {
    std::map<std::string, FileTensor> out;
    const auto f = SafetensorsFile::open(path.toStdString());
    for (const TensorInfo& t : f->header().tensors)
        out[t.name] = {t.byteSize(), dtypeName(t.dtype)};
    return out;
}

std::map<std::string, FileTensor> ggufTensors(const QString& path, uint64_t* dataOffset) {
    std::map<std::string, FileTensor> out;
    const auto f = GgufFile::open(path.toStdString());
    for (const GgufTensorInfo& t : f->header().tensors)
        out[t.name] = {t.byteSize, ggmlTypeTraits(t.type).name};
    *dataOffset = f->header().dataOffset;
    return out;
}

// ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto name (8), raw_data (9) or
// external_data (13) {key 1, value 2} with "length".
std::map<std::string, FileTensor> onnxInitializers(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    const std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, FileTensor> out;
    ProtoReader m(model, "model.onnx");
    while (!m.atEnd()) {
        const ProtoReader::Key k = m.key();
        if (k.field != 7 || k.wire != 2) {
            m.skip(k.wire);
            continue;
        }
        const std::string graph = m.bytes("graph");
        ProtoReader g(graph, "graph");
        while (!g.atEnd()) {
            const ProtoReader::Key gk = g.key();
            if (gk.field != 5 || gk.wire != 2) {
                g.skip(gk.wire);
                continue;
            }
            const std::string tensor = g.bytes("initializer");
            ProtoReader t(tensor, "initializer");
            std::string name;
            FileTensor ft;
            while (!t.atEnd()) {
                const ProtoReader::Key tk = t.key();
                if (tk.field == 8 && tk.wire == 2) {
                    name = t.bytes("name");
                } else if (tk.field == 9 && tk.wire == 2) {
                    ft.bytes = t.bytes("raw_data").size();
                } else if (tk.field == 13 && tk.wire == 2) {
                    const std::string entry = t.bytes("external_data");
                    ProtoReader e(entry, "external_data");
                    std::string key, value;
                    while (!e.atEnd()) {
                        const ProtoReader::Key ek = e.key();
                        (ek.field == 1 ? key : value) = e.bytes("entry");
                    }
                    if (key == "length")
                        ft.bytes = std::stoull(value);
                } else {
                    t.skip(tk.wire);
                }
            }
            out[name] = ft;
        }
    }
    return out;
}

} // namespace

Q_DECLARE_METATYPE(qs::quant::QuantScheme)
Q_DECLARE_METATYPE(Formula)

class TestExportSize : public QObject {
    Q_OBJECT

private:
    QString m_synth;     // F32, every linear's in a multiple of 128 and out of 8
    QString m_synthBf16; // BF16, for the source-dtype rules
    QString m_qwen2;
    QString m_stories;

    static QString synthModel(const QString& name, const std::string& dtype,
                              const std::string& arch = "llama") {
        SyntheticModelOptions o;
        o.arch = arch;
        o.outDir = (qs::test::tempDir(name) + "/model").toStdString();
        o.hiddenSize = 256;
        o.intermediateSize = 512;
        o.numLayers = 2;
        o.numHeads = 4;
        o.numKvHeads = 2;
        o.vocabSize = 512;
        o.maxPositions = 256;
        o.dtype = dtype;
        writeSyntheticModel(o);
        return QString::fromStdString(o.outDir);
    }

private Q_SLOTS:
    void initTestCase() {
        m_synth = synthModel("synth", "F32");
        m_synthBf16 = synthModel("synth-bf16", "BF16");
        m_qwen2 = synthModel("qwen2", "F32", "qwen2"); // q/k/v biases
        m_stories = qs::test::sharedPath("models/stories260K");
        qputenv("XDG_CACHE_HOME", qs::test::tempDir("cache").toUtf8());
    }

    // (1) Each linear's stored bytes per format, the totals and the scheme bits against the hand
    // formula of the layout (a refused format: its problems, no sizes).
    void handFormula_data() {
        QTest::addColumn<quant::QuantScheme>("scheme");
        QTest::addColumn<Formula>("quark");
        QTest::addColumn<Formula>("gguf");
        QTest::addColumn<Formula>("onnx");
        QTest::addColumn<Formula>("schemeBits");
        const Formula refused = [](int64_t, int64_t) { return int64_t(-1); };
        // int8 codes, fp32 scale per output channel, Quark's int32 zero point per channel
        // (written even for a symmetric scheme), ONNX's int8 one; GGUF Q8_0: 32 codes + f16.
        QTest::newRow("int8 per channel")
            << int8PerChannel()
            << Formula([](int64_t o, int64_t i) { return o * i + 4 * o + 4 * o; })
            << Formula([](int64_t o, int64_t i) { return o * (i / 32) * 34; })
            << Formula([](int64_t o, int64_t i) { return o * i + 4 * o + o; })
            << Formula([](int64_t o, int64_t i) { return 8 * o * i + 32 * o; });
        // uint4 per group of 128 with zero points: Quark packs 8 codes (and 8 zero points) per
        // int32 along the outputs of the transposed weight, fp32 scales [in/128, out]; GGUF Q4_1:
        // 16 bytes of nibbles + f16 d and m per 32; ONNX UINT4 two per byte, zero points too.
        QTest::newRow("uint4 g128 asym")
            << quant::resolveScheme("uint4_wo_128") << Formula([](int64_t o, int64_t i) {
                   return i * ceilDiv(o, 8) * 4 + (i / 128) * o * 4 + (i / 128) * ceilDiv(o, 8) * 4;
               })
            << Formula([](int64_t o, int64_t i) { return o * (i / 32) * 20; })
            << Formula([](int64_t o, int64_t i) {
                   return o * i / 2 + (i / 128) * o * 4 + ceilDiv((i / 128) * o, 2);
               })
            << Formula([](int64_t o, int64_t i) { return 4 * o * i + (o * i / 128) * (32 + 4); });
        // MXFP4: two E2M1 codes per byte, one E8M0 byte per 32 inputs.
        QTest::newRow("mxfp4") << quant::resolveScheme("mxfp4_weight_only")
                               << Formula([](int64_t o, int64_t i) {
                                      return o * i / 2 + o * ceilDiv(i, 32);
                                  })
                               << refused << refused << Formula([](int64_t o, int64_t i) {
                                      return 4 * o * i + 8 * o * ceilDiv(i, 32);
                                  });
        // NVFP4: E2M1 codes, an E4M3 scale per 16, one fp32 tensor scale; no format writes it.
        QTest::newRow("nvfp4") << quant::resolveScheme("nvfp4") << refused << refused << refused
                               << Formula([](int64_t o, int64_t i) {
                                      return 4 * o * i + 8 * o * ceilDiv(i, 16) + 32;
                                  });
        // FP8 per tensor: one byte per weight, one fp32 scale (the input's is no weight).
        QTest::newRow("fp8 per tensor")
            << quant::resolveScheme("fp8")
            << Formula([](int64_t o, int64_t i) { return o * i + 4; }) << refused
            << Formula([](int64_t o, int64_t i) { return o * i + 4; })
            << Formula([](int64_t o, int64_t i) { return 8 * o * i + 32; });
    }
    void handFormula() {
        QFETCH(quant::QuantScheme, scheme);
        QFETCH(Formula, quark);
        QFETCH(Formula, gguf);
        QFETCH(Formula, onnx);
        QFETCH(Formula, schemeBits);
        const ExportSizeReport r = exportSize(m_synth.toStdString(), recipeOf(scheme));
        QCOMPARE(r.linears.size(), size_t(14)); // q, k, v, o, gate, up, down x 2 blocks
        QCOMPARE(r.quantizedWeights, r.linearWeights);
        const std::map<std::string, Formula> formulas = {
            {"quark", quark}, {"gguf", gguf}, {"onnx", onnx}};
        for (const auto& [format, formula] : formulas) {
            const FormatSize* f = r.format(format);
            QVERIFY(f);
            if (formula(1, 1) < 0) {
                QVERIFY2(!f->holds(), format.c_str());
                QVERIFY(!r.bitsPerLinearWeight(format));
                continue;
            }
            QVERIFY2(f->holds(),
                     (format + ": " + (f->problems.empty() ? "" : f->problems[0])).c_str());
            int64_t total = 0;
            for (const LinearSize& l : r.linears) {
                const int64_t expected = formula(l.shape[0], l.shape[1]);
                QVERIFY2(int64_t(l.storedBytes.at(format)) == expected,
                         (format + " " + l.name + ": " + std::to_string(l.storedBytes.at(format)) +
                          " != " + std::to_string(expected))
                             .c_str());
                total += expected;
            }
            QCOMPARE(int64_t(f->linearWeightBytes), total);
            QCOMPARE(*r.bitsPerLinearWeight(format), 8.0 * double(total) / double(r.linearWeights));
        }
        int64_t bits = 0;
        for (const LinearSize& l : r.linears) {
            QCOMPARE(int64_t(l.bits.total()), schemeBits(l.shape[0], l.shape[1]));
            bits += schemeBits(l.shape[0], l.shape[1]);
        }
        QCOMPARE(*r.schemeBitsPerQuantizedWeight(), double(bits) / double(r.quantizedWeights));
        if (quark(1, 1) >= 0)
            QCOMPARE(*r.effectiveBits(), *r.bitsPerLinearWeight("quark"));
        else
            QVERIFY(!r.effectiveBits());
    }

    // The planner's resolution: down_proj excluded stays fp32 (32 bits per weight, counted over
    // the linear weights, not the quantized ones); an override wins over the global scheme; the
    // static input and KV-cache scales are stored but are no weight; every parameter counted.
    void recipeResolution() {
        Recipe r = recipeOf(quant::resolveScheme("uint4_wo_128"));
        r.exclude = {"*down_proj"};
        r.layerOverrides = {{"*o_proj", quant::resolveScheme("int8")}};
        r.kvCache = fp8KvCacheSpec();
        const ExportSizeReport s = exportSize(m_synth.toStdString(), r, {"quark"});
        const FormatSize& q = *s.format("quark");
        QVERIFY(q.holds());
        int64_t down = 0, o = 0, rest = 0;
        uint64_t quantizedBytes = 0, floatBytes = 0;
        for (const LinearSize& l : s.linears) {
            const int64_t out = l.shape[0], in = l.shape[1];
            if (l.name.find("down_proj") != std::string::npos) {
                QVERIFY(!l.scheme);
                QCOMPARE(l.note, std::string("excluded"));
                QCOMPARE(int64_t(l.storedBytes.at("quark")), 4 * out * in);
                floatBytes += l.storedBytes.at("quark");
                down += l.elements();
                continue;
            }
            if (l.name.find("o_proj") != std::string::npos) {
                QCOMPARE(int64_t(l.storedBytes.at("quark")), out * in + 4 + 4); // per tensor
                o += l.elements();
            } else {
                rest += l.elements();
            }
            quantizedBytes += l.storedBytes.at("quark");
        }
        QCOMPARE(s.quantizedWeights, o + rest);
        QCOMPARE(s.linearWeights, down + o + rest);
        QCOMPARE(q.quantizedWeightBytes, quantizedBytes);
        QCOMPARE(q.linearWeightBytes, quantizedBytes + floatBytes);
        // int8's static input: scale + int32 zero point on o_proj (2 blocks); the KV cache: an
        // fp32 output scale on k_proj and v_proj.
        const auto activations = q.bytesByRole.find(StoredRole::ActivationScale);
        QVERIFY(activations != q.bytesByRole.end());
        QCOMPARE(activations->second, uint64_t(2 * 8 + 2 * 2 * 4));
        uint64_t others = 0; // embedding, head, norms: copied as they are
        for (const StoredTensor& t : q.tensors)
            if (t.role == StoredRole::Other)
                others += t.bytes;
        QCOMPARE(q.modelBytes, q.linearWeightBytes + others + 2 * 8 + 2 * 2 * 4);
        QCOMPARE(*s.bitsPerParameter("quark"), 8.0 * double(q.modelBytes) / double(s.parameters));
    }

    // (2) Against the exporters' files. Quark and GGUF: every tensor's name, dtype and bytes,
    // and the file's size, exactly (the safetensors header is the writer's own text; the GGUF
    // header is its fixed part, the metadata as the exporter writes it and the tensor infos).
    // ONNX: every initializer's bytes exactly; the graph's nodes and small constants (names
    // starting "/const/": shapes, axes, epsilon) and the protobuf framing are not predicted, so
    // of model.onnx only the lower bound (the initializers' data) is checked.
    void matchesExports_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QStringList>("formats");
        const QString calib = qs::test::sharedPath("data/tinystories-calib.txt");
        const QStringList calibArgs = {"--calib-data", calib, "--num-calib-data", "2",
                                       "--seq-len",    "64"};
        QTest::newRow("stories uint4_wo_32, down_proj excluded")
            << m_stories
            << QStringList{"--quant-scheme", "uint4_wo_32", "--exclude-layers", "*down_proj",
                           "--allow-unloadable"}
            << QStringList{"quark", "gguf", "onnx"};
        QTest::newRow("stories int8 W8A8 + fp8 KV cache")
            << m_stories
            << QStringList{"--quant-scheme", "int8", "--kv-cache-dtype", "fp8"} + calibArgs
            << QStringList{"quark", "gguf", "onnx"};
        QTest::newRow("stories fp8 W8A8 + fp8 KV cache, down_proj excluded")
            << m_stories
            << QStringList{"--quant-scheme",   "fp8",       "--kv-cache-dtype", "fp8",
                           "--exclude-layers", "*down_proj"} +
                   calibArgs
            << QStringList{"quark", "onnx"};
        QTest::newRow("stories mxfp4 (partial last block)")
            << m_stories << QStringList{"--quant-scheme", "mxfp4_weight_only", "--allow-unloadable"}
            << QStringList{"quark"};
        QTest::newRow("stories int4 per channel")
            << m_stories
            << QStringList{"--quant-scheme", "int4_wo_per_channel", "--allow-unloadable"}
            << QStringList{"quark", "gguf"};
        QTest::newRow("stories nothing quantized, gguf q4_k")
            << m_stories << QStringList{"--quant-scheme", "uint4_wo_32", "--exclude-layers", "*",
                                        "--gguf-type",    "q4_k"}
            << QStringList{"gguf"};
        QTest::newRow("synth bf16 uint4_wo_128, k_proj int8")
            << m_synthBf16
            << QStringList{"--quant-scheme", "uint4_wo_128", "--layer-quant-scheme", "*k_proj",
                           "w_int8_per_tensor_sym"}
            << QStringList{"quark", "gguf", "onnx"};
        QTest::newRow("synth qwen2 int8 W8A8, biases")
            << m_qwen2 << QStringList{"--quant-scheme", "int8"} + calibArgs
            << QStringList{"quark", "onnx"};
        QTest::newRow("synth bf16 nothing quantized, gguf q8_0")
            << m_synthBf16 << QStringList{"--quant-scheme", "uint4_wo_32", "--exclude-layers", "*",
                                          "--gguf-type",    "q8_0"}
            << QStringList{"gguf"};
    }
    void matchesExports() {
        QFETCH(QString, model);
        QFETCH(QStringList, args);
        QFETCH(QStringList, formats);
        const QString out = qs::test::tempDir(QTest::currentDataTag()) + "/q";
        QStringList cmd = {"quantize", model, "--out", out, "--quiet"};
        for (const QString& f : formats)
            cmd << "--format" << f;
        const qs::test::CliRun run = qs::test::runCli(cmd + args);
        QVERIFY2(run.exitCode == 0, run.err.constData());
        for (const QString& format : formats) {
            const QString dir = formats.size() > 1 ? out + "/" + format : out;
            const Recipe recipe = Recipe::load((dir + "/quantscope_recipe.json").toStdString());
            ExportOptions options;
            if (const int i = args.indexOf("--gguf-type"); i >= 0)
                options["gguf_type"] = args[i + 1].toStdString();
            const ExportSizeReport r =
                exportSize(model.toStdString(), recipe, {format.toStdString()}, options);
            const FormatSize& f = r.formats.at(0);
            QVERIFY2(f.holds(), f.problems.empty() ? "" : f.problems[0].c_str());
            std::map<std::string, FileTensor> actual;
            uint64_t dataOffset = 0;
            if (format == "quark")
                actual = safetensorsTensors(dir + "/model.safetensors");
            else if (format == "gguf")
                actual = ggufTensors(dir + "/model.gguf", &dataOffset);
            else
                actual = onnxInitializers(dir + "/model.onnx");
            uint64_t predicted = 0;
            for (const StoredTensor& t : f.tensors) {
                const auto it = actual.find(t.name);
                QVERIFY2(it != actual.end(), (format.toStdString() + ": " + t.name).c_str());
                QVERIFY2(it->second.bytes == t.bytes,
                         (t.name + ": file " + std::to_string(it->second.bytes) + ", predicted " +
                          std::to_string(t.bytes))
                             .c_str());
                if (format != "onnx") // ONNX's type is checked by the test of its exporter
                    QCOMPARE(it->second.dtype, t.dtype);
                predicted += t.bytes;
                actual.erase(it);
            }
            for (const auto& [name, t] : actual) // what is not predicted: ONNX's constants
                QVERIFY2(format == "onnx" && name.rfind("/const/", 0) == 0, name.c_str());
            QCOMPARE(predicted, f.tensorBytes);
            const QString file = dir + "/" + QString::fromStdString(f.files.at(0).first);
            const uint64_t size = uint64_t(QFileInfo(file).size());
            if (format == "onnx") {
                QVERIFY(!f.filesExact);
                QVERIFY2(size > f.files.at(0).second, qPrintable(file));
            } else {
                QVERIFY(f.filesExact);
                QCOMPARE(size, f.files.at(0).second);
            }
            if (format == "gguf") { // the data section: each tensor padded to 32 bytes
                uint64_t data = 0;
                for (const StoredTensor& t : f.tensors)
                    data += (t.bytes + 31) / 32 * 32;
                QCOMPARE(size - dataOffset, data);
            }
            qInfo("%s %s: predicted %llu, file %llu bytes (%s); %.4f bits per linear weight",
                  QTest::currentDataTag(), qPrintable(format),
                  static_cast<unsigned long long>(f.files.at(0).second),
                  static_cast<unsigned long long>(size), qPrintable(file.section('/', -2)),
                  r.bitsPerLinearWeight(format.toStdString()).value_or(-1));
        }
    }

    // Weights in model.onnx.data (forced here; models above 1 GiB of fp32 weights get it): the
    // initializers of at least 1 KiB, each at a 4 KiB-aligned offset, so the data file holds
    // the predicted bytes plus at most 4095 bytes of padding before each but the first.
    void onnxExternalData() {
        qputenv("QS_ONNX_EXTERNAL_DATA", "1"); // read by the exporter and by exportSize
        const QString out = qs::test::tempDir("external") + "/q";
        const qs::test::CliRun run =
            qs::test::runCli({"quantize", m_synth, "--quant-scheme", "uint4_wo_128", "--format",
                              "onnx", "--out", out, "--quiet"});
        const ExportSizeReport r = exportSize(
            m_synth.toStdString(), recipeOf(quant::resolveScheme("uint4_wo_128")), {"onnx"});
        qunsetenv("QS_ONNX_EXTERNAL_DATA");
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const FormatSize& f = r.formats.at(0);
        QCOMPARE(f.files.size(), size_t(2));
        QCOMPARE(f.files[1].first, std::string(OnnxExporter::kDataFile));
        uint64_t external = 0, count = 0;
        for (const StoredTensor& t : f.tensors)
            if (t.bytes >= OnnxExporter::kExternalMinBytes) {
                external += t.bytes;
                ++count;
            }
        QCOMPARE(f.files[1].second, external);
        const uint64_t size = uint64_t(QFileInfo(out + "/model.onnx.data").size());
        QVERIFY2(size >= external && size <= external + 4095 * (count - 1),
                 qPrintable(QString("%1 outside [%2, %3]")
                                .arg(size)
                                .arg(external)
                                .arg(external + 4095 * (count - 1))));
        const std::map<std::string, FileTensor> actual = onnxInitializers(out + "/model.onnx");
        for (const StoredTensor& t : f.tensors) // the bytes of each, read through the graph
            QCOMPARE(actual.at(t.name).bytes, t.bytes);
    }

    // A recipe that cannot run on the model is an error naming the layers, as a run's would be.
    void unfitRecipeThrows() {
        Recipe r = recipeOf(quant::resolveScheme("uint4_wo_32"));
        try {
            exportSize(m_stories.toStdString(), r);
            QFAIL("no error");
        } catch (const qs::Error& e) {
            QVERIFY2(std::string(e.what()).find("in_features 172") != std::string::npos, e.what());
        }
        r.unfitPolicy = "skip"; // down_proj left unquantized, with the planner's reason
        const ExportSizeReport s = exportSize(m_stories.toStdString(), r, {"gguf"});
        int skipped = 0;
        for (const LinearSize& l : s.linears)
            skipped += l.note.find("does not divide") != std::string::npos ? 1 : 0;
        QCOMPARE(skipped, 5);
    }
};

QS_TEST_GUILESS_MAIN(TestExportSize)
#include "tst_exportsize.moc"
