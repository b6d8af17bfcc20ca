// The ONNX exporter on stories260K, read back with a protobuf reader of this test's own (it
// shares no code with the writer): the ModelProto header (IR version, opset), the graph's
// inputs/outputs, the operators, and every quantized linear's initializers: dtype, shape
// ([in, out], transposed for MatMul), the codes equal to the plan's codes, the scales and zero
// points equal to the plan's, the frozen activation scales of W8A8, external data. Refusals
// (families and schemes ONNX cannot hold) come before any work. Running the graph is
// scripts/check-onnx.sh (onnxruntime), which needs npm; this test does not.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/FormatWriter.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <QFileInfo>
#include <QtTest>

#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace {

// ---- a minimal protobuf reader (wire format), independent of core/export/OnnxProto ----
struct Field {
    uint32_t number = 0, wire = 0;
    uint64_t value = 0;    // varint / fixed32
    std::string_view data; // length-delimited
};

uint64_t readVarint(std::string_view b, size_t& i) {
    uint64_t v = 0;
    for (int shift = 0; i < b.size() && shift < 64; shift += 7) {
        const uint8_t c = uint8_t(b[i++]);
        v |= uint64_t(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    throw std::runtime_error("bad varint");
}

std::vector<Field> fields(std::string_view b) {
    std::vector<Field> out;
    size_t i = 0;
    while (i < b.size()) {
        Field f;
        const uint64_t key = readVarint(b, i);
        f.number = uint32_t(key >> 3);
        f.wire = uint32_t(key & 7);
        if (f.wire == 0) {
            f.value = readVarint(b, i);
        } else if (f.wire == 5) {
            std::memcpy(&f.value, b.data() + i, 4);
            i += 4;
        } else if (f.wire == 2) {
            const uint64_t n = readVarint(b, i);
            if (i + n > b.size())
                throw std::runtime_error("truncated field");
            f.data = b.substr(i, n);
            i += n;
        } else {
            throw std::runtime_error("unexpected wire type");
        }
        out.push_back(f);
    }
    return out;
}

struct Tensor {
    int type = 0;
    std::vector<int64_t> dims;
    std::string raw; // raw_data, or the bytes read from the external data file
    bool external = false;
};
struct Node {
    std::string op;
    std::vector<std::string> inputs;
    std::map<std::string, int64_t> ints;
};
struct Model {
    int64_t irVersion = 0, opset = 0;
    std::string producer;
    std::vector<Node> nodes;
    std::map<std::string, Tensor> initializers;
    std::vector<std::string> inputs, outputs;
};

std::string str(std::string_view v) {
    return std::string(v);
}

Model readModel(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Model m;
    for (const Field& f : fields(bytes)) {
        if (f.number == 1)
            m.irVersion = int64_t(f.value);
        else if (f.number == 2)
            m.producer = str(f.data);
        else if (f.number == 8)
            for (const Field& o : fields(f.data))
                if (o.number == 2)
                    m.opset = int64_t(o.value);
        if (f.number != 7)
            continue;
        for (const Field& g : fields(f.data)) {
            if (g.number == 1) {
                Node n;
                for (const Field& x : fields(g.data)) {
                    if (x.number == 1)
                        n.inputs.push_back(str(x.data));
                    else if (x.number == 4)
                        n.op = str(x.data);
                    else if (x.number == 5) {
                        std::string name;
                        int64_t value = 0;
                        for (const Field& a : fields(x.data)) {
                            if (a.number == 1)
                                name = str(a.data);
                            else if (a.number == 3)
                                value = int64_t(a.value);
                        }
                        n.ints[name] = value;
                    }
                }
                m.nodes.push_back(n);
            } else if (g.number == 5) {
                Tensor t;
                std::string name;
                std::map<std::string, std::string> external;
                for (const Field& x : fields(g.data)) {
                    if (x.number == 1)
                        t.dims.push_back(int64_t(x.value));
                    else if (x.number == 2)
                        t.type = int(x.value);
                    else if (x.number == 8)
                        name = str(x.data);
                    else if (x.number == 9)
                        t.raw = str(x.data);
                    else if (x.number == 14)
                        t.external = x.value == 1;
                    else if (x.number == 13) { // external_data {key, value}
                        std::string key, value;
                        for (const Field& e : fields(x.data))
                            (e.number == 1 ? key : value) = str(e.data);
                        external[key] = value;
                    }
                }
                if (t.external) {
                    std::ifstream data((QFileInfo(path).path() + "/" +
                                        QString::fromStdString(external["location"]))
                                           .toStdString(),
                                       std::ios::binary);
                    t.raw.resize(std::stoull(external["length"]));
                    data.seekg(std::streamoff(std::stoull(external["offset"])));
                    data.read(t.raw.data(), std::streamsize(t.raw.size()));
                    if (!data)
                        throw std::runtime_error("cannot read external data of " + name);
                    external.clear();
                }
                m.initializers[name] = t;
            } else if (g.number == 11 || g.number == 12) {
                for (const Field& x : fields(g.data))
                    if (x.number == 1)
                        (g.number == 11 ? m.inputs : m.outputs).push_back(str(x.data));
            }
        }
    }
    return m;
}

// TensorProto.DataType values (onnx.proto).
constexpr int kFloat = 1, kUint8 = 2, kInt8 = 3, kFloat8E4M3FN = 17, kUint4 = 21;

// Codes of an int4/uint4/int8/uint8/fp8 initializer as int32 (4-bit: low nibble first).
at::Tensor codesOf(const Tensor& t) {
    int64_t n = 1;
    for (int64_t d : t.dims)
        n *= d;
    at::Tensor out = at::empty({n}, at::kInt);
    int32_t* p = out.data_ptr<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t byte = uint8_t(t.raw[size_t(t.type >= 21 ? i / 2 : i)]);
        if (t.type == kUint4)
            p[i] = (byte >> (4 * (i % 2))) & 0xF;
        else if (t.type == 22)
            p[i] = int32_t(int8_t(uint8_t(byte << (4 * (1 - i % 2))))) >> 4;
        else if (t.type == kInt8)
            p[i] = int8_t(byte);
        else
            p[i] = byte;
    }
    return out.reshape(t.dims);
}

at::Tensor floatsOf(const Tensor& t) {
    return at::from_blob(const_cast<char*>(t.raw.data()), t.dims, at::kFloat).clone();
}

std::set<std::string> opTypes(const Model& m) {
    std::set<std::string> ops;
    for (const Node& n : m.nodes)
        ops.insert(n.op);
    return ops;
}

const Node* nodeReading(const Model& m, const std::string& op, const std::string& input) {
    for (const Node& n : m.nodes)
        if (n.op == op && !n.inputs.empty() && n.inputs[0] == input)
            return &n;
    return nullptr;
}

} // namespace

class TestOnnxExport : public QObject {
    Q_OBJECT

private:
    QString m_model;

    qs::QuantizationOutcome exportWith(const std::string& scheme,
                                       const std::vector<std::string>& exclude,
                                       const QString& out) const {
        qs::QuantFlags flags;
        flags.quantScheme = scheme;
        flags.excludeLayers = exclude;
        flags.calibData = qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        flags.numCalibData = 4;
        flags.seqLen = 64;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.outDir = out.toStdString();
        req.exportFormats = {"onnx"};
        req.keepPlans = true;
        return qs::runQuantization(req);
    }

    // Every quantized linear: codes [in, out] = the plan's codes transposed, scales and zero
    // points the plan's (transposed for groups), DequantizeLinear's axis/block_size.
    static void compareWithPlans(const Model& m, const qs::QuantizationOutcome& o, int codeType,
                                 int& checked) {
        for (const auto& block : o.plans)
            for (const qs::LayerPlan& p : block) {
                if (!p.weight.codes)
                    continue;
                const std::string n = p.name;
                const auto w = m.initializers.find(n + ".weight_quantized");
                QVERIFY2(w != m.initializers.end(), n.c_str());
                QCOMPARE(w->second.type, codeType);
                QCOMPARE(w->second.dims, (std::vector<int64_t>{p.shape[1], p.shape[0]}));
                QVERIFY2(at::equal(codesOf(w->second), p.weight.codes->codes.to(at::kInt).t()),
                         n.c_str());
                const at::Tensor scale = floatsOf(m.initializers.at(n + ".weight_scale"));
                const qs::quant::QuantSpec& spec = p.scheme->weight;
                const bool grouped = spec.granularity == qs::quant::Granularity::PerGroup;
                at::Tensor planScale = p.weight.codes->params.scale.to(at::kFloat);
                at::Tensor planZp = p.weight.codes->params.zeroPoint.to(at::kInt);
                if (grouped) {
                    planScale = planScale.t();
                    planZp = planZp.t();
                }
                QVERIFY2(at::equal(scale, planScale.reshape(scale.sizes())), n.c_str());
                if (codeType != kFloat8E4M3FN) {
                    const Tensor& zp = m.initializers.at(n + ".weight_zero_point");
                    QCOMPARE(zp.type, codeType);
                    QVERIFY(at::equal(codesOf(zp), planZp.reshape(scale.sizes())));
                }
                const Node* dq = nodeReading(m, "DequantizeLinear", n + ".weight_quantized");
                QVERIFY2(dq, n.c_str());
                if (grouped) {
                    QCOMPARE(dq->ints.at("axis"), int64_t(0));
                    QCOMPARE(dq->ints.at("block_size"), int64_t(spec.groupSize));
                } else if (spec.granularity == qs::quant::Granularity::PerChannel) {
                    QCOMPARE(dq->ints.at("axis"), int64_t(1)); // the outputs of [in, out]
                    QCOMPARE(scale.sizes().vec(), std::vector<int64_t>{p.shape[0]});
                } else {
                    QVERIFY(!dq->ints.count("axis"));
                    QCOMPARE(scale.dim(), int64_t(0));
                }
                ++checked;
            }
    }

private Q_SLOTS:
    void initTestCase() { m_model = qs::test::sharedPath("models/stories260K"); }

    // Full precision: opset 13, no QDQ; the float weights are the source's, transposed.
    void floatGraph() {
        const QString out = qs::test::tempDir("onnx-fp32") + "/export";
        exportWith("", {}, out);
        const Model m = readModel(out + "/model.onnx");
        QCOMPARE(m.producer, std::string("Quantscope"));
        QCOMPARE(m.opset, int64_t(13));
        QCOMPARE(m.irVersion, int64_t(7));
        QCOMPARE(m.inputs, std::vector<std::string>{"input_ids"});
        QCOMPARE(m.outputs, std::vector<std::string>{"logits"});
        const std::set<std::string> ops = opTypes(m);
        for (const char* op : {"Gather", "ReduceMean", "Sqrt", "Reciprocal", "Softmax", "Sigmoid",
                               "Expand", "MatMul", "Slice", "Concat", "Where"})
            QVERIFY2(ops.count(op), op);
        QVERIFY(!ops.count("DequantizeLinear"));
        // 5 blocks x 7 linears + the head; 8 heads over 4 KV heads: k and v are expanded.
        int matmuls = 0, expands = 0;
        for (const Node& n : m.nodes) {
            matmuls += n.op == "MatMul";
            expands += n.op == "Expand";
        }
        QCOMPARE(matmuls, 5 * 7 + 5 * 2 + 1); // linears, two attention products per block, head
        QCOMPARE(expands, 5 * 2);
        const Tensor& q = m.initializers.at("model.layers.0.self_attn.q_proj.weight_transposed");
        QCOMPARE(q.type, kFloat);
        QCOMPARE(q.dims, (std::vector<int64_t>{64, 64}));
        const Tensor& e = m.initializers.at("model.embed_tokens.weight");
        QCOMPARE(e.dims, (std::vector<int64_t>{512, 64}));
        QCOMPARE(m.initializers.at("rope.cos_table").dims, (std::vector<int64_t>{512, 8}));
        for (const char* f : {"quantscope_recipe.json", "tokenizer.model", "config.json"})
            QVERIFY2(QFileInfo::exists(out + "/" + f), f);
    }

    // W8A8 int8 per tensor, static: int8 codes, scalar scale and zero point, and a
    // QuantizeLinear -> DequantizeLinear with the frozen input scale before every MatMul.
    void int8StaticPerTensor() {
        const QString out = qs::test::tempDir("onnx-int8") + "/export";
        const qs::QuantizationOutcome o = exportWith("int8", {}, out);
        const Model m = readModel(out + "/model.onnx");
        QCOMPARE(m.opset, int64_t(13));
        int checked = 0;
        compareWithPlans(m, o, kInt8, checked);
        QCOMPARE(checked, 35);
        for (const auto& block : o.plans)
            for (const qs::LayerPlan& p : block) {
                const Tensor& s = m.initializers.at(p.name + ".input_scale");
                QVERIFY(s.dims.empty());
                QCOMPARE(floatsOf(s).item<float>(), p.input->params().scale.item<float>());
                QCOMPARE(m.initializers.at(p.name + ".input_zero_point").type, kInt8);
            }
        int quantizeNodes = 0;
        for (const Node& n : m.nodes)
            quantizeNodes += n.op == "QuantizeLinear";
        QCOMPARE(quantizeNodes, 35);
        QVERIFY(nodeReading(m, "QuantizeLinear", "/layers.0/input_norm")); // q, k, v inputs
    }

    // int8 per-channel weights with static per-tensor inputs: DequantizeLinear along axis 1
    // (the output features of the transposed weight), still opset 13.
    void int8PerChannel() {
        const QString out = qs::test::tempDir("onnx-int8pc") + "/export";
        const qs::QuantizationOutcome o =
            exportWith("w_int8_per_channel_a_int8_per_tensor_sym", {}, out);
        const Model m = readModel(out + "/model.onnx");
        QCOMPARE(m.opset, int64_t(13));
        int checked = 0;
        compareWithPlans(m, o, kInt8, checked);
        QCOMPARE(checked, 35);
    }

    // uint4 per group of 32 (opset 21): packed nibbles, [in/32, out] scales and zero points,
    // DequantizeLinear(axis 0, block_size 32); gate/up (172 outputs) need no padding in ONNX.
    void uint4PerGroup() {
        const QString out = qs::test::tempDir("onnx-u4") + "/export";
        const qs::QuantizationOutcome o = exportWith("uint4_wo_32", {"*down_proj"}, out);
        const Model m = readModel(out + "/model.onnx");
        QCOMPARE(m.opset, int64_t(21));
        QCOMPARE(m.irVersion, int64_t(10));
        int checked = 0;
        compareWithPlans(m, o, kUint4, checked);
        QCOMPARE(checked, 30);
        QCOMPARE(m.initializers.at("model.layers.0.mlp.gate_proj.weight_scale").dims,
                 (std::vector<int64_t>{2, 172}));
        QVERIFY(m.initializers.count("model.layers.0.mlp.down_proj.weight_transposed"));
        QVERIFY(!m.initializers.count("model.layers.0.mlp.down_proj.input_scale"));
    }

    // fp8 e4m3 (opset 19): the codes are the E4M3FN bytes, no weight zero point; the static
    // input's zero point is a float8 zero (it types QuantizeLinear's output).
    void fp8PerTensor() {
        const QString out = qs::test::tempDir("onnx-fp8") + "/export";
        const qs::QuantizationOutcome o = exportWith("fp8", {}, out);
        const Model m = readModel(out + "/model.onnx");
        QCOMPARE(m.opset, int64_t(19));
        int checked = 0;
        compareWithPlans(m, o, kFloat8E4M3FN, checked);
        QCOMPARE(checked, 35);
        QCOMPARE(m.initializers.at("model.layers.0.mlp.up_proj.input_zero_point").type,
                 kFloat8E4M3FN);
        QVERIFY(!m.initializers.count("model.layers.0.mlp.up_proj.weight_zero_point"));
    }

    // Schemes ONNX cannot hold and families the exporter does not write: refused before any
    // work, naming the layer (or the model type) and the reason.
    void refusedBeforeWork() {
        const QString out = qs::test::tempDir("onnx-refused") + "/export";
        for (const char* scheme : {"mxfp4_weight_only", "ptpc_fp8", "nvfp4"}) {
            try {
                exportWith(scheme, {}, out);
                QFAIL(scheme);
            } catch (const qs::Error& e) {
                const std::string m = e.what();
                QVERIFY2(m.find("onnx") != std::string::npos, m.c_str());
                QVERIFY2(m.find("model.layers.0.self_attn.q_proj") != std::string::npos, m.c_str());
            }
            QVERIFY(!QFileInfo::exists(out));
        }
        qs::SyntheticModelOptions opt;
        opt.arch = "opt";
        opt.outDir = (qs::test::tempDir("onnx-opt") + "/model").toStdString();
        opt.hiddenSize = 32;
        opt.intermediateSize = 64;
        opt.numLayers = 1;
        opt.numHeads = 2;
        opt.numKvHeads = 2;
        opt.vocabSize = 320;
        opt.maxPositions = 64;
        qs::writeSyntheticModel(opt);
        qs::RunRequest req;
        req.modelDir = opt.outDir;
        req.outDir = out.toStdString();
        req.exportFormats = {"onnx"};
        try {
            qs::runQuantization(req);
            QFAIL("wrote an OPT model as ONNX");
        } catch (const qs::Error& e) {
            QVERIFY2(std::string(e.what()).find("'opt'") != std::string::npos, e.what());
        }
        QVERIFY(!QFileInfo::exists(out));
    }

    // External data (what models beyond protobuf's 2 GiB get; forced here on stories260K): the
    // large initializers live in model.onnx.data at 4 KiB-aligned offsets, and the codes read
    // from there are the plans'; small ones (scales) stay inline.
    void externalDataHoldsTheWeights() {
        const QString out = qs::test::tempDir("onnx-external") + "/export";
        qputenv("QS_ONNX_EXTERNAL_DATA", "1");
        const qs::QuantizationOutcome o = exportWith("uint4_wo_32", {"*down_proj"}, out);
        qunsetenv("QS_ONNX_EXTERNAL_DATA");
        QVERIFY(QFileInfo(out + "/model.onnx.data").size() > 0);
        const Model m = readModel(out + "/model.onnx");
        QVERIFY(m.initializers.at("model.embed_tokens.weight").external);
        QVERIFY(m.initializers.at("model.layers.0.mlp.gate_proj.weight_quantized").external);
        QVERIFY(!m.initializers.at("model.layers.0.self_attn.q_proj.weight_scale").external);
        int checked = 0;
        compareWithPlans(m, o, kUint4, checked);
        QCOMPARE(checked, 30);
    }
};

QS_TEST_GUILESS_MAIN(TestOnnxExport)
#include "tst_onnxexport.moc"
