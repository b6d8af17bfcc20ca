// Malformed and hostile Quark hf_format exports (the fuzz_quark_checkpoint findings and their
// neighbours): each must be refused by inspectQuarkFolder / openCheckpointForCompute with a
// qs::Error naming the file, the field or tensor and the reason, never a crash, a foreign
// exception or a huge allocation, and a refused export leaves nothing in the dequantization
// cache. A hand-made uint4 per-group export checks that the accepted layout still dequantizes
// to (code - zero point) * scale. Every export is built here, byte by byte (no shared data).
#include "TestMain.h"
#include "model/QuarkFolder.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QStandardPaths>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <limits>

using nlohmann::json;

namespace {

struct StoredTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    QByteArray bytes;
};

// safetensors image: u64 little-endian header length, JSON header, the tensors back to back.
QByteArray safetensorsImage(const std::vector<StoredTensor>& tensors) {
    json header = {{"__metadata__", {{"format", "pt"}}}};
    QByteArray data;
    for (const StoredTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype},
                          {"shape", t.shape},
                          {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
        data += t.bytes;
    }
    QByteArray text = QByteArray::fromStdString(header.dump());
    while (text.size() % 8)
        text += ' ';
    QByteArray out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[i] = char(uint8_t(uint64_t(text.size()) >> (8 * i)));
    return out + text + data;
}

template <typename T> QByteArray raw(std::initializer_list<T> values) {
    QByteArray b;
    for (T v : values)
        b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return b;
}

// A Quark weight spec (Quark 0.13's field names).
json weightSpec(const std::string& dtype, const std::string& qscheme, json chAxis, json groupSize,
                bool symmetric) {
    return {{"dtype", dtype},
            {"qscheme", qscheme},
            {"ch_axis", chAxis},
            {"group_size", groupSize},
            {"symmetric", symmetric},
            {"is_dynamic", false},
            {"round_method", "half_even"},
            {"scale_type", "float"}};
}

json quarkConfig(const json& weight) {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"hidden_size", 8},
            {"num_hidden_layers", 1},
            {"quantization_config",
             {{"quant_method", "quark"},
              {"export", {{"pack_method", "reorder"}, {"weight_format", "real_quantized"}}},
              {"global_quant_config",
               {{"weight", weight},
                {"input_tensors", nullptr},
                {"output_tensors", nullptr},
                {"bias", nullptr}}},
              {"layer_quant_config", json::object()},
              {"layer_type_quant_config", json::object()},
              {"exclude", {"lm_head"}}}}};
}

const char* kLayer = "model.layers.0.self_attn.q_proj";

// uint4 per group 8, [out 8, in 8]: codes (o + i) % 16, zero point o, scale (o + 1) / 2.
std::vector<StoredTensor> uint4Layer() {
    QByteArray weight; // [in, 1]: word i holds the 8 outputs of input i in the reorder order
    const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; ++i) {
        uint32_t w = 0;
        for (int k = 0; k < 8; ++k)
            w |= uint32_t((order[k] + i) % 16) << (4 * k);
        weight += raw<uint32_t>({w});
    }
    uint32_t zp = 0;
    QByteArray scale;
    for (int k = 0; k < 8; ++k)
        zp |= uint32_t(order[k]) << (4 * k);
    for (int o = 0; o < 8; ++o)
        scale += raw<float>({0.5f * float(o + 1)});
    const std::string l = kLayer;
    return {{l + ".weight", "I32", {8, 1}, weight},
            {l + ".weight_scale", "F32", {1, 8}, scale},
            {l + ".weight_zero_point", "I32", {1, 1}, raw<uint32_t>({zp})},
            {"model.norm.weight", "F32", {2}, raw<float>({1.0f, 1.0f})}};
}

json uint4Config() {
    return quarkConfig(weightSpec("uint4", "per_group", -1, 8, false));
}

} // namespace

class TestQuarkFolderHostile : public QObject {
    Q_OBJECT

private:
    QString m_cache;
    int m_count = 0;

    QString writeExport(const QByteArray& config, const std::vector<StoredTensor>& tensors) {
        const QString dir = qs::test::tempDir(QString("hostile-%1").arg(++m_count));
        QFile c(dir + "/config.json");
        if (!c.open(QIODevice::WriteOnly) || c.write(config) != config.size())
            qFatal("cannot write config.json");
        c.close();
        QFile m(dir + "/model.safetensors");
        const QByteArray image = safetensorsImage(tensors);
        if (!m.open(QIODevice::WriteOnly) || m.write(image) != image.size())
            qFatal("cannot write model.safetensors");
        return dir;
    }
    QString writeExport(const json& config, const std::vector<StoredTensor>& tensors) {
        return writeExport(QByteArray::fromStdString(config.dump()), tensors);
    }

    bool cacheEmpty() const {
        QDirIterator it(m_cache, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        return !it.hasNext();
    }

    // Opening `dir` is refused with a message naming each of `names` (file, field/tensor,
    // reason), and nothing is left in the cache.
    void expectRefused(const QString& dir, const QStringList& names) {
        QDir(m_cache).removeRecursively();
        try {
            qs::openCheckpointForCompute(dir.toStdString());
            QFAIL("expected a qs::Error");
        } catch (const qs::Error& e) {
            const QString m = QString::fromStdString(e.what());
            for (const QString& n : names)
                QVERIFY2(m.contains(n), qPrintable("'" + n + "' not in: " + m));
        }
        QVERIFY(cacheEmpty());
    }

private Q_SLOTS:
    void initTestCase() {
        m_cache = qs::test::tempDir("hostile-cache");
        qputenv("XDG_CACHE_HOME", m_cache.toUtf8());
        QStandardPaths::setTestModeEnabled(false);
    }

    // The positive control: the layout the refusals below break opens, and dequantizes to
    // (code - zp) * scale. Small integers times halves are exact in fp32, so equality is exact.
    void handMadeUint4Opens() {
        const QString dir = writeExport(uint4Config(), uint4Layer());
        const qs::QuarkFolderInfo info = qs::inspectQuarkFolder(dir.toStdString());
        QVERIFY(info.realQuantized);
        QCOMPARE(int(info.layers.size()), 1);
        const auto opened = qs::openCheckpointForCompute(dir.toStdString());
        const std::string w = std::string(kLayer) + ".weight";
        const qs::TensorInfo& t = opened->info(w);
        QVERIFY(t.dtype == qs::DType::F32);
        QCOMPARE(t.shape, (std::vector<int64_t>{8, 8}));
        QVERIFY(opened->find(std::string(kLayer) + ".weight_scale") == nullptr);
        const float* v = reinterpret_cast<const float*>(opened->fileOf(w).data(t));
        for (int o = 0; o < 8; ++o)
            for (int i = 0; i < 8; ++i)
                QCOMPARE(v[o * 8 + i], float((o + i) % 16 - o) * 0.5f * float(o + 1));
    }

    // fuzz_quark_checkpoint findings: quantization_config fields of the wrong type escaped as
    // nlohmann::json::type_error (quant_method, export.pack_method, export.weight_format).
    void configFieldsOfTheWrongType() {
        json c = uint4Config();
        c["quantization_config"]["quant_method"] = 1;
        expectRefused(writeExport(c, uint4Layer()),
                      {"config.json", "quantization_config.quant_method", "expected a string"});
        c = uint4Config();
        c["quantization_config"]["export"]["weight_format"] = json::array();
        expectRefused(writeExport(c, uint4Layer()),
                      {"config.json", "quantization_config.export.weight_format", "array"});
        c = uint4Config();
        c["quantization_config"]["export"]["pack_method"] = 5;
        const QString dir = writeExport(c, uint4Layer());
        expectRefused(dir, {"config.json", "quantization_config.export.pack_method", "got 5"});
        try { // inspect reads pack_method itself, before the recipe import
            qs::inspectQuarkFolder(dir.toStdString());
            QFAIL("expected a qs::Error");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("quantization_config.export.pack_method"));
            QVERIFY2(e.reason().find("number") != std::string::npos, e.what());
        }
        // Absent or null: Quark's defaults (reorder, real_quantized).
        c["quantization_config"]["export"]["pack_method"] = nullptr;
        QCOMPARE(qs::inspectQuarkFolder(writeExport(c, uint4Layer()).toStdString()).packMethod,
                 std::string("reorder"));
    }

    // fuzz_quark_checkpoint findings: zero-size tensors with huge dimensions overflowed int64
    // (UBSan) computing [out, in]: in = 8 x the packed width (per channel), out + 7 (per group).
    // Now a quantized weight must be a non-empty 2-D tensor, and every other shape must equal
    // what the weight implies, so the dequantized size is bounded by the stored bytes.
    void hostileShapes() {
        const std::string l = kLayer;
        const int64_t huge = int64_t(1) << 60;
        expectRefused(writeExport(quarkConfig(weightSpec("int4", "per_channel", 0, nullptr, true)),
                                  {{l + ".weight", "I32", {0, huge}, {}},
                                   {l + ".weight_scale", "F32", {0}, {}},
                                   {l + ".weight_zero_point", "I32", {0}, {}}}),
                      {"model.safetensors", "q_proj.weight", "not a non-empty 2-D tensor"});
        expectRefused(
            writeExport(uint4Config(), {{l + ".weight", "I32", {0, huge}, {}},
                                        {l + ".weight_scale", "F32", {0, INT64_MAX}, {}},
                                        {l + ".weight_zero_point", "I32", {0, huge}, {}}}),
            {"model.safetensors", "q_proj.weight", "not a non-empty 2-D tensor"});
        // A real weight beside an empty scale claiming 2^40 outputs: refused before the output
        // file (2^40 x 8 floats) is laid out.
        std::vector<StoredTensor> t = uint4Layer();
        t[1] = {l + ".weight_scale", "F32", {0, int64_t(1) << 40}, {}};
        expectRefused(writeExport(uint4Config(), t),
                      {"model.safetensors", "q_proj.weight'", "expected [8, 137438953472]"});
        t = uint4Layer();
        t[0] = {l + ".weight", "I32", {8}, QByteArray(32, '\0')};
        expectRefused(writeExport(uint4Config(), t), {"q_proj.weight", "shape [8]"});
    }

    // Found reviewing what the fuzzer reached: MX weights (FP4 codes two per byte, E8M0 scales)
    // were taken as [out, in] codes and dequantized to garbage, or refused as a shape mismatch.
    void unreadSchemesNamed() {
        const std::string l = kLayer;
        json mx = weightSpec("fp4", "per_group", -1, 32, false);
        mx["symmetric"] = nullptr;
        mx["scale_format"] = "e8m0";
        // MXFP4 is read; its stored scales must be one E8M0 byte per 32 inputs and row.
        expectRefused(
            writeExport(quarkConfig(mx), {{l + ".weight", "U8", {8, 32}, QByteArray(256, 1)},
                                          {l + ".weight_scale", "U8", {8, 1}, QByteArray(8, 127)}}),
            {"model.safetensors", "q_proj.weight_scale", "expected [8, 2]"});
        json mx8 = weightSpec("fp8_e4m3", "per_group", -1, 32, false);
        mx8["symmetric"] = nullptr;
        mx8["scale_format"] = "e8m0";
        expectRefused(writeExport(quarkConfig(mx8),
                                  {{l + ".weight", "U8", {8, 32}, QByteArray(256, 1)},
                                   {l + ".weight_scale", "U8", {8, 1}, QByteArray(8, 127)}}),
                      {"model.safetensors", "q_proj.weight", "weights are not read"});
        expectRefused(writeExport(quarkConfig(weightSpec("int8", "per_channel", 1, nullptr, true)),
                                  {{l + ".weight", "I8", {8, 8}, QByteArray(64, 1)},
                                   {l + ".weight_scale", "F32", {8}, QByteArray(32, 0)},
                                   {l + ".weight_zero_point", "I32", {8}, QByteArray(32, 0)}}),
                      {"config.json", "q_proj", "ch_axis 1"});
    }

    // Stored dtypes are checked against the scheme: an int4 weight that is not int32 words, an
    // fp8 weight stored as floats, integer scales, per-group inputs that are no whole group.
    void storedDtypesChecked() {
        const std::string l = kLayer;
        std::vector<StoredTensor> t = uint4Layer();
        t[0] = {l + ".weight", "U8", {8, 4}, QByteArray(32, 0)};
        expectRefused(writeExport(uint4Config(), t),
                      {"model.safetensors", "q_proj.weight", "stored as U8", "I32"});
        t = uint4Layer();
        t[1] = {l + ".weight_scale", "I32", {1, 8}, QByteArray(32, 1)};
        expectRefused(writeExport(uint4Config(), t),
                      {"q_proj.weight_scale", "stored as I32", "F32 or F16 or BF16"});
        const json fp8 = quarkConfig(weightSpec("fp8_e4m3", "per_tensor", nullptr, nullptr, true));
        expectRefused(writeExport(fp8, {{l + ".weight", "F32", {8, 8}, QByteArray(256, 0)},
                                        {l + ".weight_scale", "F32", {}, raw<float>({0.1f})}}),
                      {"q_proj.weight", "stored as F32", "F8_E4M3"});
        expectRefused(writeExport(quarkConfig(weightSpec("int8", "per_group", -1, 8, true)),
                                  {{l + ".weight", "I8", {8, 12}, QByteArray(96, 1)},
                                   {l + ".weight_scale", "F32", {8, 1}, QByteArray(32, 0)},
                                   {l + ".weight_zero_point", "I32", {8, 1}, QByteArray(32, 0)}}),
                      {"q_proj.weight", "12 inputs are not a whole number of groups of 8"});
        // A packed weight without its scale is not copied as if it were floats.
        t = uint4Layer();
        t.erase(t.begin() + 1, t.begin() + 3);
        t.push_back({"model.layers.0.self_attn.k_proj.weight_scale",
                     "F32",
                     {1, 8},
                     QByteArray(32, 0)}); // keeps the export quantized
        expectRefused(
            writeExport(uint4Config(), t),
            {"q_proj.weight", "stored as I32", "no model.layers.0.self_attn.q_proj.weight_scale"});
    }

    // The stored activation parameters an eval run applies: one positive finite scale each (a
    // zero, negative or NaN input_scale divided the activations into inf/NaN without an error).
    void storedActivationScalesChecked() {
        const std::string l = kLayer;
        auto withInput = [&](float scale) {
            std::vector<StoredTensor> t = uint4Layer();
            t.push_back({l + ".input_scale", "F32", {}, raw<float>({scale})});
            t.push_back({l + ".input_zero_point", "I32", {}, raw<int32_t>({3})});
            return t;
        };
        const qs::quant::StoredQuantization ok =
            qs::readStoredQuantization(writeExport(uint4Config(), withInput(0.25f)).toStdString());
        QVERIFY(ok.at(l).weight && ok.at(l).input);
        QCOMPARE(ok.at(l).input->scale.item<float>(), 0.25f);
        QCOMPARE(ok.at(l).input->zeroPoint.item<int>(), 3);
        for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity()}) {
            const QString dir = writeExport(uint4Config(), withInput(bad));
            try {
                qs::readStoredQuantization(dir.toStdString());
                QFAIL(qPrintable(QString("accepted input_scale %1").arg(bad)));
            } catch (const qs::Error& e) {
                QCOMPARE(e.field(), l + ".input_scale");
                QVERIFY2(e.reason().find("not a positive finite number") != std::string::npos,
                         e.what());
            }
        }
    }
};

QS_TEST_GUILESS_MAIN(TestQuarkFolderHostile)
#include "tst_quarkfolder_hostile.moc"
