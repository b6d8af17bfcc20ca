// Reading and writing safetensors files, checked against independent references: files laid out
// by Python following the format spec (and by the `safetensors` package when it is installed),
// the real stories260K checkpoint with shapes derived from its config.json, and Python reading
// back what our writer produced.
#include "TestMain.h"
#include "io/SafetensorsFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <cstring>

#include <sys/stat.h>

using namespace qs;

namespace {

// Builds the same tensors with torch in every mode, so each mode is checked against torch's own
// bytes rather than against anything our code produced.
//   spec OUT     writes OUT by hand from the format spec (u64 LE length, JSON, data), JSON keys
//                in name order but data in reverse name order; prints the manifest
//   package OUT  writes OUT with safetensors.torch.save_file; exit 3 when not installed
//   check PATH   reads PATH by hand (and with the package when installed) and compares every
//                tensor with the regenerated ones; prints "hand-ok" and maybe "package-ok"
const char* const kPythonScript = R"PY(
import sys, json, struct, torch
mode, path = sys.argv[1], sys.argv[2]
T = {
    "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1,
    "f16": torch.tensor([1.5, -2.0, 65504.0, 6.1e-5], dtype=torch.float16),
    "bf16": torch.tensor([1.0, -3.25, 1e30], dtype=torch.bfloat16),
    "f64": torch.tensor([3.141592653589793], dtype=torch.float64),
    "i64": torch.tensor([[-(2**62), 7], [0, 2**40]], dtype=torch.int64),
    "i32": torch.tensor(-123456, dtype=torch.int32),
    "i16": torch.tensor([-32768, 1, 32767], dtype=torch.int16),
    "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
    "u8": torch.arange(5, dtype=torch.uint8) * 50,
    "bool": torch.tensor([True, False, True]),
    "empty": torch.zeros(0, 4, dtype=torch.float32),
    "model.layers.0.self_attn.q_proj.weight": torch.linspace(-1, 1, 24).reshape(4, 6),
}
NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
         torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
META = {"format": "pt", "origin": "quantscope-test"}
def raw(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    a = t.numpy()
    return a.astype(a.dtype.newbyteorder("<")).tobytes()
def manifest():
    return {k: {"dtype": NAMES[t.dtype], "shape": list(t.shape), "hex": raw(t).hex()}
            for k, t in T.items()}
if mode == "spec":
    header, data = {"__metadata__": META}, b""
    for k in sorted(T, reverse=True):
        b = raw(T[k])
        header[k] = {"dtype": NAMES[T[k].dtype], "shape": list(T[k].shape),
                     "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
    print(json.dumps({"metadata": META, "tensors": manifest()}))
elif mode == "package":
    try:
        from safetensors.torch import save_file
    except ImportError:
        sys.exit(3)
    save_file(T, path, metadata=META)
    print(json.dumps({"metadata": META, "tensors": manifest()}))
elif mode == "check":
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    assert n % 8 == 0, "header length %d not a multiple of 8" % n
    text = blob[8:8 + n].decode("utf-8")
    assert text.rstrip(" ").endswith("}"), "header padded with something other than spaces"
    header = json.loads(text)
    assert header.pop("__metadata__") == META, "metadata differs"
    assert set(header) == set(T), "names differ: %s" % sorted(header)
    end = 0
    for k, t in T.items():
        e = header[k]
        assert e["dtype"] == NAMES[t.dtype] and e["shape"] == list(t.shape), k
        b, f = e["data_offsets"]
        assert b == end, "%s not contiguous" % k
        assert blob[8 + n + b:8 + n + f] == raw(t), "%s bytes differ" % k
        end = f
    assert 8 + n + end == len(blob), "file size differs"
    print("hand-ok")
    try:
        from safetensors.torch import load_file
    except ImportError:
        sys.exit(0)
    loaded = load_file(path)
    for k, t in T.items():
        assert loaded[k].dtype == t.dtype and torch.equal(loaded[k], t), k
    print("package-ok")
)PY";

QString pythonPath() {
    return qs::test::referencePython();
}

struct PythonResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

PythonResult runPython(const QString& mode, const QString& path) {
    QProcess proc;
    proc.start(pythonPath(), {"-c", QString::fromUtf8(kPythonScript), mode, path});
    PythonResult result;
    if (!proc.waitForFinished(120000) || proc.exitStatus() != QProcess::NormalExit)
        return result;
    result.exitCode = proc.exitCode();
    result.out = proc.readAllStandardOutput();
    result.err = proc.readAllStandardError();
    return result;
}

std::string bytesOf(const SafetensorsFile& file, const TensorInfo& info) {
    return std::string(reinterpret_cast<const char*>(file.data(info)), info.byteSize());
}

std::vector<int64_t> shapeOf(const QJsonArray& array) {
    std::vector<int64_t> shape;
    for (const QJsonValue& v : array)
        shape.push_back(v.toInteger());
    return shape;
}

// Compares every tensor of `file` with the manifest printed by the Python script.
void compareWithManifest(const SafetensorsFile& file, const QJsonObject& manifest) {
    const QJsonObject tensors = manifest.value("tensors").toObject();
    QCOMPARE(file.header().tensors.size(), size_t(tensors.size()));
    for (auto it = tensors.begin(); it != tensors.end(); ++it) {
        const QJsonObject expected = it.value().toObject();
        const TensorInfo* info = file.find(it.key().toStdString());
        QVERIFY2(info, qPrintable(it.key()));
        QCOMPARE(QString::fromStdString(dtypeName(info->dtype)),
                 expected.value("dtype").toString());
        QCOMPARE(info->shape, shapeOf(expected.value("shape").toArray()));
        const QByteArray want = QByteArray::fromHex(expected.value("hex").toString().toLatin1());
        QCOMPARE(info->byteSize(), uint64_t(want.size()));
        QCOMPARE(QByteArray::fromStdString(bytesOf(file, *info)), want);
    }
    const QJsonObject meta = manifest.value("metadata").toObject();
    QCOMPARE(file.header().metadata.size(), size_t(meta.size()));
    for (auto it = meta.begin(); it != meta.end(); ++it)
        QCOMPARE(QString::fromStdString(file.header().metadata.at(it.key().toStdString())),
                 it.value().toString());
}

uint64_t allocatedBytes(const QString& path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return ~uint64_t(0);
    return uint64_t(st.st_blocks) * 512;
}

QStringList filesIn(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsSpecLayoutWrittenByPython();
    void readsReferencePackageOutput();
    void writerOutputReadByPython();
    void roundTripsEveryDtype();
    void opensStories260K();
    void streamingWriterWithSkipsMakesSparseFile();
    void skippingTheLastTensorKeepsTheFileSize();
    void destroyedWriterLeavesNoFile();
    void writerRefusesMisuse();
};

void TestSafetensors::readsSpecLayoutWrittenByPython() {
    const QString path = qs::test::tempDir("st-spec") + "/spec.safetensors";
    const PythonResult py = runPython("spec", path);
    QVERIFY2(py.exitCode == 0, py.err.constData());
    const QJsonObject manifest = QJsonDocument::fromJson(py.out).object();
    QVERIFY(!manifest.isEmpty());

    const auto file = SafetensorsFile::open(path.toStdString());
    compareWithManifest(*file, manifest);
    // The JSON lists keys by name, the data is in reverse name order: header() is by offset.
    const auto& tensors = file->header().tensors;
    for (size_t i = 1; i < tensors.size(); ++i)
        QVERIFY(tensors[i - 1].end == tensors[i].begin);
    QVERIFY(tensors.front().name > tensors.back().name);
    QVERIFY(!file->find("missing"));
    QVERIFY(!file->find("__metadata__"));
}

void TestSafetensors::readsReferencePackageOutput() {
    const QString path = qs::test::tempDir("st-pkg") + "/pkg.safetensors";
    const PythonResult py = runPython("package", path);
    if (py.exitCode == 3)
        QSKIP("the safetensors Python package is not installed for this interpreter (QS_PYTHON)");
    QVERIFY2(py.exitCode == 0, py.err.constData());
    const auto file = SafetensorsFile::open(path.toStdString());
    compareWithManifest(*file, QJsonDocument::fromJson(py.out).object());
}

void TestSafetensors::writerOutputReadByPython() {
    // Take names, shapes and bytes from torch, write them with our writer in torch's order, and
    // let Python check the file by hand (and with the package when present).
    const QString dir = qs::test::tempDir("st-check");
    const PythonResult spec = runPython("spec", dir + "/unused.safetensors");
    QVERIFY2(spec.exitCode == 0, spec.err.constData());
    const QJsonObject manifest = QJsonDocument::fromJson(spec.out).object();
    const QJsonObject tensors = manifest.value("tensors").toObject();

    // QJsonObject iterates by sorted key; the check script expects torch's dict order, which the
    // writer must preserve, so rebuild that order from a fixed list.
    const QStringList order = {"f32", "f16",  "bf16",  "f64",
                               "i64", "i32",  "i16",   "i8",
                               "u8",  "bool", "empty", "model.layers.0.self_attn.q_proj.weight"};
    QCOMPARE(order.size(), tensors.size());
    std::vector<TensorBlob> blobs;
    for (const QString& name : order) {
        const QJsonObject t = tensors.value(name).toObject();
        TensorBlob blob;
        blob.name = name.toStdString();
        blob.dtype = *dtypeFromName(t.value("dtype").toString().toStdString());
        blob.shape = shapeOf(t.value("shape").toArray());
        blob.bytes = QByteArray::fromHex(t.value("hex").toString().toLatin1()).toStdString();
        blobs.push_back(std::move(blob));
    }
    const QJsonObject meta = manifest.value("metadata").toObject();
    std::map<std::string, std::string> metadata;
    for (auto it = meta.begin(); it != meta.end(); ++it)
        metadata[it.key().toStdString()] = it.value().toString().toStdString();

    const QString path = dir + "/ours.safetensors";
    writeSafetensors(path.toStdString(), blobs, metadata);
    const PythonResult check = runPython("check", path);
    QVERIFY2(check.exitCode == 0, check.err.constData());
    QVERIFY(check.out.contains("hand-ok"));
    if (!check.out.contains("package-ok"))
        qInfo("safetensors package not installed: checked by the hand-written reader only");
}

void TestSafetensors::roundTripsEveryDtype() {
    // Bytes are arbitrary patterns: the writer must store them verbatim whatever the dtype.
    std::vector<TensorBlob> blobs;
    const std::vector<std::pair<std::string, int>> dtypes = {
        {"F64", 8},  {"F32", 4},     {"F16", 2},     {"BF16", 2},   {"I64", 8}, {"I32", 4},
        {"I16", 2},  {"I8", 1},      {"U64", 8},     {"U32", 4},    {"U16", 2}, {"U8", 1},
        {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
    for (size_t i = 0; i < dtypes.size(); ++i) {
        TensorBlob blob;
        blob.name = "t" + std::to_string(i) + "." + dtypes[i].first;
        blob.dtype = *dtypeFromName(dtypes[i].first);
        QCOMPARE(dtypeBits(blob.dtype), dtypes[i].second * 8);
        blob.shape = {int64_t(i % 3 + 1), 3};
        const size_t bytes = size_t(blob.shape[0] * 3 * dtypes[i].second);
        for (size_t b = 0; b < bytes; ++b)
            blob.bytes.push_back(char((b * 37 + i * 11) & 0xff));
        blobs.push_back(std::move(blob));
    }
    TensorBlob fp4{"fp4.weight", DType::F4, {2, 5}, std::string("\x01\x23\x45\x67\x89", 5)};
    QCOMPARE(dtypeBits(DType::F4), 4);
    blobs.push_back(fp4);
    blobs.push_back({"scalar", DType::F32, {}, std::string("\x00\x00\x80\x3f", 4)});
    blobs.push_back({"zero", DType::BF16, {3, 0}, std::string()});

    const QString path = qs::test::tempDir("st-rt") + "/rt.safetensors";
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"ünïcode", "✓"}};
    writeSafetensors(path.toStdString(), blobs, metadata);

    const auto file = SafetensorsFile::open(path.toStdString());
    QCOMPARE(file->header().metadata, metadata);
    QCOMPARE(file->header().tensors.size(), blobs.size());
    for (size_t i = 0; i < blobs.size(); ++i) {
        const TensorInfo& info = file->header().tensors[i];
        QCOMPARE(info.name, blobs[i].name); // written in the given order
        QCOMPARE(info.dtype, blobs[i].dtype);
        QCOMPARE(info.shape, blobs[i].shape);
        QCOMPARE(bytesOf(*file, info), blobs[i].bytes);
    }
    QCOMPARE(file->find("scalar")->numel(), int64_t(1));
    QCOMPARE(file->find("fp4.weight")->byteSize(), uint64_t(5));

    // Spec layout: u64 LE length, header padded with spaces to a multiple of 8.
    QFile raw(path);
    QVERIFY(raw.open(QIODevice::ReadOnly));
    const QByteArray all = raw.readAll();
    uint64_t headerBytes = 0;
    std::memcpy(&headerBytes, all.constData(), 8); // x86/ARM Linux: little-endian host
    QCOMPARE(headerBytes % 8, uint64_t(0));
    QCOMPARE(file->header().dataOffset, 8 + headerBytes);
    const QByteArray json = all.mid(8, int(headerBytes));
    QVERIFY(json.startsWith("{\"__metadata__\":"));
    QVERIFY(QJsonDocument::fromJson(json).isObject());
    for (int i = json.lastIndexOf('}') + 1; i < json.size(); ++i)
        QCOMPARE(json.at(i), ' ');
    QCOMPARE(uint64_t(all.size()), file->fileSize());
}

void TestSafetensors::opensStories260K() {
    const QString dir = qs::test::sharedPath("models/stories260K");
    QFile configFile(dir + "/config.json");
    QVERIFY(configFile.open(QIODevice::ReadOnly));
    const QJsonObject config = QJsonDocument::fromJson(configFile.readAll()).object();
    const int64_t hidden = config.value("hidden_size").toInteger();
    const int64_t inter = config.value("intermediate_size").toInteger();
    const int64_t layers = config.value("num_hidden_layers").toInteger();
    const int64_t heads = config.value("num_attention_heads").toInteger();
    const int64_t kvHeads = config.value("num_key_value_heads").toInteger();
    const int64_t headDim = config.value("head_dim").toInteger();
    const int64_t vocab = config.value("vocab_size").toInteger();
    QVERIFY(hidden > 0 && layers > 0);

    // Hugging Face Llama naming; lm_head is absent because tie_word_embeddings is true.
    std::map<std::string, std::vector<int64_t>> expected = {
        {"model.embed_tokens.weight", {vocab, hidden}}, {"model.norm.weight", {hidden}}};
    for (int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        expected[p + "input_layernorm.weight"] = {hidden};
        expected[p + "post_attention_layernorm.weight"] = {hidden};
        expected[p + "self_attn.q_proj.weight"] = {heads * headDim, hidden};
        expected[p + "self_attn.k_proj.weight"] = {kvHeads * headDim, hidden};
        expected[p + "self_attn.v_proj.weight"] = {kvHeads * headDim, hidden};
        expected[p + "self_attn.o_proj.weight"] = {hidden, heads * headDim};
        expected[p + "mlp.gate_proj.weight"] = {inter, hidden};
        expected[p + "mlp.up_proj.weight"] = {inter, hidden};
        expected[p + "mlp.down_proj.weight"] = {hidden, inter};
    }
    QVERIFY(config.value("tie_word_embeddings").toBool());

    const QString path = dir + "/model.safetensors";
    const auto file = SafetensorsFile::open(path.toStdString());
    QCOMPARE(file->header().tensors.size(), expected.size());
    for (const auto& [name, shape] : expected) {
        const TensorInfo* info = file->find(name);
        QVERIFY2(info, name.c_str());
        QCOMPARE(info->shape, shape);
        QCOMPARE(info->dtype, DType::F32);
    }
    QCOMPARE(file->header().metadata.at("format"), std::string("pt"));
    QCOMPARE(file->fileSize(), uint64_t(QFileInfo(path).size()));

    // Bytes: compare the final norm's values with Python's reading of the same file.
    QProcess proc;
    proc.start(pythonPath(), {"-c",
                              "import sys,json,struct,numpy as np\n"
                              "b=open(sys.argv[1],'rb').read();n=struct.unpack('<Q',b[:8])[0]\n"
                              "e=json.loads(b[8:8+n])['model.norm.weight']['data_offsets']\n"
                              "v=np.frombuffer(b[8+n+e[0]:8+n+e[1]],dtype='<f4')\n"
                              "print(' '.join(repr(float(x)) for x in v))",
                              path});
    QVERIFY(proc.waitForFinished(60000));
    QCOMPARE(proc.exitCode(), 0);
    const QList<QByteArray> values = proc.readAllStandardOutput().trimmed().split(' ');
    const TensorInfo* norm = file->find("model.norm.weight");
    QCOMPARE(values.size(), int(norm->numel()));
    std::vector<float> ours(size_t(norm->numel()));
    std::memcpy(ours.data(), file->data(*norm), norm->byteSize());
    for (int i = 0; i < values.size(); ++i)
        QCOMPARE(ours[size_t(i)], values[i].toFloat());
}

void TestSafetensors::streamingWriterWithSkipsMakesSparseFile() {
    const QString dir = qs::test::tempDir("st-stream");
    const QString path = dir + "/big.safetensors";
    const int64_t bigRows = 16384; // 16384 x 1024 F32 = 64 MiB, skipped
    std::vector<TensorInfo> layout(3);
    layout[0].name = "a";
    layout[0].dtype = DType::I16;
    layout[0].shape = {3};
    layout[1].name = "big";
    layout[1].dtype = DType::F32;
    layout[1].shape = {bigRows, 1024};
    layout[2].name = "c";
    layout[2].dtype = DType::U8;
    layout[2].shape = {5};
    {
        SafetensorsWriter writer(path.toStdString(), layout, {{"note", "sparse"}});
        QCOMPARE(writer.nextName(), std::string("a"));
        writer.writeNext("\x01\x00\x02\x00\x03\x00", 6);
        QCOMPARE(writer.nextName(), std::string("big"));
        writer.skipNext();
        QCOMPARE(writer.nextName(), std::string("c"));
        writer.writeNext("hello", 5);
        QCOMPARE(writer.nextName(), std::string());
        QVERIFY(!QFileInfo::exists(path)); // nothing at the target before commit
        writer.commit();
    }
    QCOMPARE(filesIn(dir), QStringList{"big.safetensors"});

    const auto file = SafetensorsFile::open(path.toStdString());
    const uint64_t bigBytes = uint64_t(bigRows) * 1024 * 4;
    QCOMPARE(file->fileSize(), file->header().dataOffset + 6 + bigBytes + 5);
    QCOMPARE(file->header().dataOffset % 8, uint64_t(0));
    QCOMPARE(bytesOf(*file, *file->find("a")), std::string("\x01\x00\x02\x00\x03\x00", 6));
    QCOMPARE(bytesOf(*file, *file->find("c")), std::string("hello"));
    const TensorInfo* big = file->find("big");
    QCOMPARE(big->byteSize(), bigBytes);
    // The hole reads back as zeros; spot-check across it rather than touch all 64 MiB.
    const uint8_t* p = file->data(*big);
    for (uint64_t off = 0; off < bigBytes; off += 4093)
        QCOMPARE(int(p[off]), 0);
    QCOMPARE(int(p[bigBytes - 1]), 0);
    // Sparse: far fewer blocks allocated than the apparent size.
    QVERIFY2(allocatedBytes(path) < bigBytes / 4,
             qPrintable(QString::number(allocatedBytes(path))));
}

void TestSafetensors::skippingTheLastTensorKeepsTheFileSize() {
    const QString dir = qs::test::tempDir("st-skiplast");
    const QString path = dir + "/tail.safetensors";
    std::vector<TensorInfo> layout(2);
    layout[0].name = "head";
    layout[0].dtype = DType::F32;
    layout[0].shape = {2};
    layout[1].name = "tail";
    layout[1].dtype = DType::F4;
    layout[1].shape = {1000, 1000};
    {
        SafetensorsWriter writer(path.toStdString(), layout);
        writer.writeNext("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
        writer.skipNext();
        writer.commit();
    }
    const auto file = SafetensorsFile::open(path.toStdString());
    QCOMPARE(file->fileSize(), file->header().dataOffset + 8 + 500000);
    const TensorInfo* tail = file->find("tail");
    const uint8_t* p = file->data(*tail);
    QCOMPARE(int(p[0]), 0);
    QCOMPARE(int(p[tail->byteSize() - 1]), 0);

    // Only skips, nothing written at all.
    const QString onlySkips = dir + "/skips.safetensors";
    {
        SafetensorsWriter writer(onlySkips.toStdString(), layout);
        writer.skipNext();
        writer.skipNext();
        writer.commit();
    }
    QCOMPARE(SafetensorsFile::open(onlySkips.toStdString())->find("tail")->end,
             uint64_t(8 + 500000));
}

void TestSafetensors::destroyedWriterLeavesNoFile() {
    const QString dir = qs::test::tempDir("st-abort");
    const QString path = dir + "/never.safetensors";
    std::vector<TensorInfo> layout(2);
    layout[0].name = "x";
    layout[0].shape = {1};
    layout[1].name = "y";
    layout[1].shape = {1};
    {
        SafetensorsWriter writer(path.toStdString(), layout);
        writer.writeNext("abcd", 4);
        QCOMPARE(filesIn(dir).size(), 1); // the temp file beside the target
        QVERIFY(!filesIn(dir).contains("never.safetensors"));
    }
    QVERIFY(filesIn(dir).isEmpty());

    // A failing commit (not all tensors written) also leaves nothing once the writer is gone.
    {
        SafetensorsWriter writer(path.toStdString(), layout);
        writer.writeNext("abcd", 4);
        QVERIFY_THROWS_EXCEPTION(qs::Error, writer.commit());
    }
    QVERIFY(filesIn(dir).isEmpty());

    // An existing file at the target is untouched by an abandoned rewrite.
    const QString existing = dir + "/existing.safetensors";
    writeSafetensors(existing.toStdString(), {{"old", DType::U8, {2}, "ok"}});
    const QByteArray before = [&] {
        QFile f(existing);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    {
        SafetensorsWriter writer(existing.toStdString(), layout);
        writer.writeNext("abcd", 4);
    }
    QFile after(existing);
    QVERIFY(after.open(QIODevice::ReadOnly));
    QCOMPARE(after.readAll(), before);
    QCOMPARE(filesIn(dir), QStringList{"existing.safetensors"});

    // And writeSafetensors with bad input throws before leaving anything behind.
    QVERIFY_THROWS_EXCEPTION(qs::Error, writeSafetensors((dir + "/bad.safetensors").toStdString(),
                                                         {{"ok", DType::U8, {1}, "a"},
                                                          {"short", DType::F32, {2}, "x"}}));
    QCOMPARE(filesIn(dir), QStringList{"existing.safetensors"});
}

void TestSafetensors::writerRefusesMisuse() {
    const QString dir = qs::test::tempDir("st-misuse");
    const std::string path = (dir + "/m.safetensors").toStdString();
    auto expectError = [](const std::function<void()>& fn, const char* field, const char* reason) {
        try {
            fn();
        } catch (const qs::Error& e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains(field) && msg.contains(reason), qPrintable(msg));
            return;
        }
        QFAIL("no qs::Error thrown");
    };
    std::vector<TensorInfo> dup(2);
    dup[0].name = dup[1].name = "same";
    expectError([&] { SafetensorsWriter w(path, dup); }, "same", "duplicate");
    std::vector<TensorInfo> meta(1);
    meta[0].name = "__metadata__";
    expectError([&] { SafetensorsWriter w(path, meta); }, "__metadata__", "not a valid");
    std::vector<TensorInfo> odd(1);
    odd[0].name = "packed";
    odd[0].dtype = DType::F4;
    odd[0].shape = {3};
    expectError([&] { SafetensorsWriter w(path, odd); }, "packed", "odd element count");
    std::vector<TensorInfo> neg(1);
    neg[0].name = "neg";
    neg[0].shape = {2, -1};
    expectError([&] { SafetensorsWriter w(path, neg); }, "neg.shape[1]", "negative");
    std::vector<TensorInfo> one(1);
    one[0].name = "w";
    one[0].shape = {2};
    {
        SafetensorsWriter w(path, one);
        expectError([&] { w.writeNext("abc", 3); }, "w", "got 3 bytes");
        w.writeNext("abcdefgh", 8);
        expectError([&] { w.writeNext("abcdefgh", 8); }, "", "already written");
        expectError([&] { w.skipNext(); }, "", "already written");
        w.commit();
        expectError([&] { w.commit(); }, "", "already committed");
    }
    QVERIFY(QFileInfo::exists(QString::fromStdString(path)));
    QCOMPARE(filesIn(dir).size(), 1);
}

QS_TEST_GUILESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
