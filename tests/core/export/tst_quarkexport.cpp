// The Quark hf_format exporter against what AMD Quark 0.13 itself wrote for stories260K
// (../shared/reference/quark-exports, README there): tensor names, dtypes, shapes and bytes,
// and the quantization_config block; the refusals (formats that cannot hold a scheme, layouts
// the consumers cannot load) before any work; atomic output folders.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/ExportFolder.h"
#include "export/ExportFormat.h"
#include "export/QuarkHfExporter.h"
#include "io/SafetensorsFile.h"
#include "quant/Packing.h"
#include "quant/SchemeRegistry.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace {

nlohmann::json readJson(const QString& path) {
    std::ifstream in(path.toStdString());
    return nlohmann::json::parse(in);
}

QByteArray bytesOf(const qs::SafetensorsFile& f, const std::string& name, int64_t row) {
    const qs::TensorInfo* info = f.find(name);
    if (!info || info->shape.size() != 2)
        qFatal("missing 2-D tensor %s", name.c_str());
    const int64_t width = info->shape[1] * qs::dtypeBits(info->dtype) / 8;
    return QByteArray(reinterpret_cast<const char*>(f.data(*info)) + row * width, width);
}

at::Tensor tensorOf(const qs::SafetensorsFile& f, const std::string& name) {
    const qs::TensorInfo* info = f.find(name);
    if (!info)
        qFatal("missing tensor %s", name.c_str());
    at::ScalarType t = at::kFloat;
    if (info->dtype == qs::DType::I32)
        t = at::kInt;
    else if (info->dtype != qs::DType::F32)
        qFatal("unexpected dtype of %s", name.c_str());
    return at::from_blob(const_cast<uint8_t*>(f.data(*info)), info->shape, t).clone();
}

} // namespace

class TestQuarkExport : public QObject {
    Q_OBJECT

private:
    QString m_model, m_reference;

    qs::RunRequest request(const std::string& scheme, const std::vector<std::string>& exclude,
                           const QString& out) const {
        qs::QuantFlags flags;
        flags.quantScheme = scheme;
        flags.excludeLayers = exclude;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.outDir = out.toStdString();
        req.exportFormats = {"quark"};
        return req;
    }

    // Every tensor of `ours` has the reference's name, dtype and shape; returns the names
    // whose bytes differ.
    static QStringList compareLayout(const QString& ours, const QString& reference) {
        const auto a = qs::SafetensorsFile::open(ours.toStdString());
        const auto r = qs::SafetensorsFile::open(reference.toStdString());
        [&] { QCOMPARE(a->header().tensors.size(), r->header().tensors.size()); }();
        QStringList differ;
        for (const qs::TensorInfo& ref : r->header().tensors) {
            const qs::TensorInfo* t = a->find(ref.name);
            if (!t) {
                differ << QString::fromStdString(ref.name) + " (missing)";
                continue;
            }
            if (t->dtype != ref.dtype || t->shape != ref.shape) {
                differ << QString::fromStdString(ref.name) + " (dtype/shape)";
                continue;
            }
            if (std::memcmp(a->data(*t), r->data(ref), ref.byteSize()) != 0)
                differ << QString::fromStdString(ref.name);
        }
        return differ;
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        m_reference = qs::test::sharedPath("reference/quark-exports");
    }

    // uint4_wo_32, *down_proj and lm_head excluded: every tensor byte-identical to Quark's,
    // and the quantization_config block equal to Quark's. gate/up (172 outputs) are written
    // only when asked (--allow-unloadable), as Quark writes them.
    void uint4PerGroupEqualsQuark() {
        const QString out = qs::test::tempDir("u4") + "/export";
        qs::RunRequest req = request("uint4_wo_32", {"*down_proj", "lm_head"}, out);
        req.allowUnloadable = true;
        const qs::QuantizationOutcome o = qs::runQuantization(req);
        // gate/up of 5 blocks share one reason: one warning naming the first layers and
        // counting the rest
        QCOMPARE(int(o.warnings.size()), 1);
        QVERIFY(o.warnings[0].find("model.layers.0.mlp.gate_proj") != std::string::npos);
        QVERIFY(o.warnings[0].find("and 6 more layers") != std::string::npos);
        const QStringList differ = compareLayout(out + "/model.safetensors",
                                                 m_reference + "/uint4_wo_32/model.safetensors");
        QVERIFY2(differ.isEmpty(), qPrintable(differ.join(", ")));
        QCOMPARE(readJson(out + "/config.json")["quantization_config"],
                 readJson(m_reference + "/uint4_wo_32/config.json")["quantization_config"]);
        for (const char* f : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                              "generation_config.json", "quantscope_recipe.json"})
            QVERIFY2(QFile::exists(out + "/" + f), f);
    }

    // The head is written in float whatever the recipe says, and Quark's loaders quantize every
    // Linear the config does not exclude: the export names lm_head in `exclude` unless an
    // exclusion already reaches it (then nothing is added twice).
    void floatHeadAlwaysExcluded() {
        const QString out = qs::test::tempDir("head") + "/export";
        qs::runQuantization(request("w_int8_per_tensor_sym", {}, out + "/plain"));
        QCOMPARE(readJson(out + "/plain/config.json")["quantization_config"]["exclude"],
                 nlohmann::json::array({"lm_head"}));
        qs::runQuantization(
            request("w_int8_per_tensor_sym", {"*lm_head", "*down_proj"}, out + "/named"));
        const nlohmann::json named =
            readJson(out + "/named/config.json")["quantization_config"]["exclude"];
        QCOMPARE(std::count(named.begin(), named.end(), nlohmann::json("*lm_head")), 1);
        QCOMPARE(std::count(named.begin(), named.end(), nlohmann::json("lm_head")), 0);
        QCOMPARE(int(named.size()), 1 + 5); // *lm_head and the five down_proj by name
    }

    // The consumer (transformers + amd-quark) allocates floor(out/8) packed columns: refused by
    // default, before any work, naming the layers (the first four, then how many more), the
    // reason and the fix.
    void unloadableLayoutRefused() {
        const QString out = qs::test::tempDir("u4refused") + "/export";
        try {
            qs::runQuantization(request("uint4_wo_32", {"*down_proj", "lm_head"}, out));
            QFAIL("expected a refusal");
        } catch (const qs::Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("model.layers.1.mlp.up_proj and 6 more layers: uint4 per group") !=
                         std::string::npos,
                     m.c_str());
            QVERIFY2(m.find("floor(out/8) = 21") != std::string::npos, m.c_str());
            QVERIFY2(m.find("exclude this layer") != std::string::npos, m.c_str());
        }
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(QDir(QFileInfo(out).absolutePath())
                    .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot)
                    .isEmpty());
        // Excluding them as the message says gives a file the consumer loads.
        qs::runQuantization(
            request("uint4_wo_32", {"*down_proj", "*gate_proj", "*up_proj", "lm_head"}, out));
        QVERIFY(QFileInfo::exists(out + "/model.safetensors"));
    }

    // fp8 W8A8 per tensor static, lm_head excluded, calibrated as the reference README says
    // (all of tinystories-calib.txt: 15 windows of 256). Weights and weight scales are
    // byte-identical. input_scale = amax / 448 of activations that Quark computed with torch
    // 2.15's kernels and we with LibTorch's: the amax values differ in the last bits (fp32 sums
    // in another order through up to 5 blocks), so they are compared at 1e-6 relative (8 ulps
    // of fp32; measured 7.6e-7 at most).
    void fp8EqualsQuark() {
        const QString out = qs::test::tempDir("fp8") + "/export";
        qs::QuantFlags flags;
        flags.quantScheme = "fp8";
        flags.excludeLayers = {"lm_head"};
        flags.calibData = qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        flags.numCalibData = 15;
        flags.seqLen = 256;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.outDir = out.toStdString();
        req.exportFormats = {"hf_format"}; // Quark's --model_export name
        qs::runQuantization(req);
        const QStringList differ =
            compareLayout(out + "/model.safetensors", m_reference + "/fp8/model.safetensors");
        for (const QString& d : differ)
            QVERIFY2(d.endsWith(".input_scale"), qPrintable(d));
        const auto a = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        const auto r =
            qs::SafetensorsFile::open((m_reference + "/fp8/model.safetensors").toStdString());
        int inputScales = 0;
        for (const qs::TensorInfo& t : r->header().tensors) {
            if (t.name.find(".input_scale") == std::string::npos)
                continue;
            ++inputScales;
            const double ours = tensorOf(*a, t.name).item<float>();
            const double quark = tensorOf(*r, t.name).item<float>();
            QVERIFY2(std::abs(ours - quark) <= 1e-6 * std::abs(quark), t.name.c_str());
        }
        QCOMPARE(inputScales, 35);
        QCOMPARE(readJson(out + "/config.json")["quantization_config"],
                 readJson(m_reference + "/fp8/config.json")["quantization_config"]);
    }

    // Dequantizing the real-quantized file gives the fake-quantized checkpoint of the same run,
    // bit for bit: (code - zero point) * scale in fp32 is what the fake quantizer computes.
    // Per channel and per group, both pack orders' readers agree with the writer.
    void dequantizedEqualsFakeQuant_data() {
        QTest::addColumn<QString>("scheme");
        QTest::newRow("uint4_wo_32") << "uint4_wo_32";
        QTest::newRow("int4_wo_32") << "int4_wo_32";
        QTest::newRow("uint4_wo_per_channel") << "uint4_wo_per_channel";
    }
    void dequantizedEqualsFakeQuant() {
        QFETCH(QString, scheme);
        const QString out = qs::test::tempDir("deq-" + scheme) + "/export";
        qs::RunRequest req =
            request(scheme.toStdString(), {"*down_proj", "*gate_proj", "*up_proj", "lm_head"}, out);
        req.exportFormats = {"fake", "quark"};
        qs::runQuantization(req);
        const auto fake =
            qs::SafetensorsFile::open((out + "/fake/model.safetensors").toStdString());
        const auto quark =
            qs::SafetensorsFile::open((out + "/quark/model.safetensors").toStdString());
        QVERIFY(QFile::exists(out + "/fake/quantscope_recipe.json"));
        QVERIFY(QFile::exists(out + "/quark/quantscope_recipe.json"));
        const bool perGroup = scheme.endsWith("32");
        const bool isSigned = scheme.startsWith("int");
        int checked = 0;
        for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
            const std::string n = "model.layers.2.self_attn." + std::string(proj);
            const at::Tensor expected = tensorOf(*fake, n + ".weight");
            const int64_t outF = expected.size(0), inF = expected.size(1);
            at::Tensor codes, zp, scale = tensorOf(*quark, n + ".weight_scale");
            if (perGroup) {
                codes = qs::quant::unpackInt4(tensorOf(*quark, n + ".weight"),
                                              qs::quant::PackOrder::Reorder, isSigned, outF)
                            .t();
                zp = qs::quant::unpackInt4(tensorOf(*quark, n + ".weight_zero_point"),
                                           qs::quant::PackOrder::Reorder, isSigned, outF)
                         .t();
                scale = scale.t();
                const int64_t g = inF / scale.size(1);
                zp = zp.repeat_interleave(g, 1);
                scale = scale.repeat_interleave(g, 1);
            } else {
                codes = qs::quant::unpackInt4(tensorOf(*quark, n + ".weight"),
                                              qs::quant::PackOrder::Reorder, isSigned, inF);
                zp = qs::quant::unpackInt4(tensorOf(*quark, n + ".weight_zero_point"),
                                           qs::quant::PackOrder::Reorder, isSigned, outF)
                         .unsqueeze(1);
                scale = scale.unsqueeze(1);
            }
            const at::Tensor deq = (codes.to(at::kInt) - zp.to(at::kInt)).to(at::kFloat) * scale;
            QVERIFY2(at::equal(deq, expected), n.c_str());
            ++checked;
        }
        QCOMPARE(checked, 4);
    }

    // MX weights as AMD Quark 0.13 writes them (export_safetensors, custom_mode "quark",
    // real_quantized, pack_method reorder; the llama template's mxfp4 / mxfp6_e3m2 / mxfp6_e2m3
    // config, lm_head excluded): uint8 codes [out, in/2] (FP4: low nibble = even input) or
    // [out, in/4*3] (FP6: four codes as a little-endian 24-bit word), E8M0 scales uint8
    // [out, ceil(in/32)]; MX inputs are dynamic, so no input tensor. The expected bytes are rows
    // of Quark's own export of stories260K (how it was made and compared in full: the MX
    // section of docs/exporters.md); down_proj (172 inputs) ends in a zero-padded block of 12.
    void mxEqualsQuark_data() {
        QTest::addColumn<QString>("scheme");
        QTest::addColumn<QString>("quarkDtype"); // the config block's dtype
        QTest::addColumn<QString>("layer");
        QTest::addColumn<int>("row");
        QTest::addColumn<QByteArray>("weight"); // Quark's packed bytes of that row
        QTest::addColumn<QByteArray>("scales"); // Quark's E8M0 bytes of that row
        const QString down = "model.layers.0.mlp.down_proj", k = "model.layers.4.self_attn.k_proj";
        QTest::newRow("mxfp4 down_proj row 0")
            << "mxfp4"
            << "fp4" << down << 0
            << QByteArray::fromHex("46565220b9697ce4049aa9e9fc4c5dde6763c42ab32041bec5d3cc2e523d"
                                   "614b9415dc3e15662bd5d9b260b43551a5aa9b0320ab16004339b019c910"
                                   "3c919130949a9c12a6a03603b011091090111ab15bee64f6d216")
            << QByteArray::fromHex("7a7a7a7b7b7a");
        QTest::newRow("mxfp4 k_proj row 31")
            << "mxfp4"
            << "fp4" << k << 31
            << QByteArray::fromHex(
                   "b1bdd51c1a3311d1c3961cb6b405e14574e9b500ca655ce563aa3e42c7b166cd")
            << QByteArray::fromHex("7d7c");
        QTest::newRow("mxfp6_e3m2 down_proj row 0")
            << "mxfp6_e3m2"
            << "fp6_e3m2" << down << 0
            << QByteArray::fromHex("1cb66954964ef10d777797f15758cbf1fcf2b89f6379c6e75e6775195e4f"
                                   "d66d4a0ec6db1b5eed38ce5795965b0f775f19ab4578ce5b9ac46d36a5e9"
                                   "702ed56477dd9a2569192dd3b67c2d4a65d31dc42456d656e2ed462f3e42"
                                   "f915c50e5b5c183bc7784c41dc2cd4dc5529480d45b2584261fc40b3d3d8"
                                   "b6d6f358b7fd52ce41")
            << QByteArray::fromHex("787878797978");
        QTest::newRow("mxfp6_e3m2 k_proj row 31")
            << "mxfp6_e3m2"
            << "fp6_e3m2" << k << 31
            << QByteArray::fromHex("929ddb598e4b34735d51f4e816cec977b3d997ada1119f61d817f7597d22"
                                   "75ae6db7a6f11757d3fd4561defdd41ca7e3")
            << QByteArray::fromHex("7b7a");
        QTest::newRow("mxfp6_e2m3 down_proj row 0")
            << "mxfp6_e2m3"
            << "fp6_e2m3" << down << 0
            << QByteArray::fromHex("596455c8141ea54b66ef26e10e909ae539de312f43f294cf9dc664129c1e"
                                   "8c1b1a0384b756bcd8318c27c9242f44e63e923815af9c3395815d6d42d5"
                                   "e46cac80f6b8556350126aa2add90841d2a21921048b242e803b16240c10"
                                   "715394831834917896709910d709a859a308814a14261012404910e720b0"
                                   "ed94e79066f9868c11")
            << QByteArray::fromHex("7a7a7a7b7b7a");
        QTest::newRow("mxfp6_e2m3 k_proj row 31")
            << "mxfp6_e2m3"
            << "fp6_e2m3" << k << 31
            << QByteArray::fromHex("463bb3d2fc1aa8d0384531d04d8c99af60b54e3b85052e418f57ea931a06"
                                   "693c5d2e45e10da6a27983449c3bac1946c3")
            << QByteArray::fromHex("7d7c");
    }
    void mxEqualsQuark() {
        QFETCH(QString, scheme);
        QFETCH(QString, quarkDtype);
        QFETCH(QString, layer);
        QFETCH(int, row);
        QFETCH(QByteArray, weight);
        QFETCH(QByteArray, scales);
        const QString out = qs::test::tempDir("mx-" + scheme) + "/export";
        qs::RunRequest req = request(scheme.toStdString(), {"lm_head"}, out);
        req.allowUnloadable = true; // down_proj's 6 scales per row, as Quark writes them
        const qs::QuantizationOutcome o = qs::runQuantization(req);
        QCOMPARE(int(o.warnings.size()), 1);
        QVERIFY2(o.warnings[0].find("model.layers.4.mlp.down_proj") == std::string::npos &&
                     o.warnings[0].find("and 1 more layers") != std::string::npos &&
                     o.warnings[0].find("floor(in/32) = 5") != std::string::npos,
                 o.warnings[0].c_str());
        const auto f = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        const std::string n = layer.toStdString();
        const qs::TensorInfo* w = f->find(n + ".weight");
        const qs::TensorInfo* s = f->find(n + ".weight_scale");
        QVERIFY(w && s);
        QVERIFY(w->dtype == qs::DType::U8 && s->dtype == qs::DType::U8);
        QCOMPARE(w->shape[1], int64_t(weight.size()));
        QCOMPARE(s->shape, (std::vector<int64_t>{w->shape[0], int64_t(scales.size())}));
        QCOMPARE(bytesOf(*f, n + ".weight", row).toHex(), weight.toHex());
        QCOMPARE(bytesOf(*f, n + ".weight_scale", row).toHex(), scales.toHex());
        // 35 quantized linears (7 per block), weights and scales only: 82 tensors as Quark's.
        int weightScales = 0;
        for (const qs::TensorInfo& t : f->header().tensors) {
            QVERIFY2(t.name.find(".input_scale") == std::string::npos &&
                         t.name.find(".input_zero_point") == std::string::npos,
                     t.name.c_str());
            weightScales += t.name.find(".weight_scale") != std::string::npos;
        }
        QCOMPARE(weightScales, 35);
        QCOMPARE(int(f->header().tensors.size()), 82);
        const nlohmann::json g = readJson(out + "/config.json")["quantization_config"];
        const nlohmann::json& gw = g["global_quant_config"]["weight"];
        const nlohmann::json& gi = g["global_quant_config"]["input_tensors"];
        QCOMPARE(gw["dtype"].get<std::string>(), quarkDtype.toStdString());
        QCOMPARE(gw["scale_format"].get<std::string>(), std::string("e8m0"));
        QCOMPARE(gw["group_size"].get<int>(), 32);
        QCOMPARE(gi["dtype"].get<std::string>(), quarkDtype.toStdString());
        QCOMPARE(gi["is_dynamic"].get<bool>(), true);
        QCOMPARE(g["exclude"], nlohmann::json::array({"lm_head"}));
    }

    // What the MX layout cannot hold is refused naming scheme and reason: FP4 packs input pairs
    // and FP6 input quadruples; a partial last block only by default (the consumer's limit).
    void mxUnfitShapes() {
        const qs::quant::QuantScheme mx4 = qs::quant::resolveScheme("mxfp4");
        const qs::quant::QuantScheme mx6 = qs::quant::resolveScheme("mxfp6_e2m3");
        QVERIFY(qs::QuarkHfExporter::unfitReason(mx4, {64, 64}).empty());
        QVERIFY(qs::QuarkHfExporter::unfitReason(mx6, {64, 64}).empty());
        // A partial last block: Quark writes it, its loader allocates one scale less.
        QVERIFY(qs::QuarkHfExporter::unfitReason(mx4, {64, 172}, false).empty());
        QVERIFY(qs::QuarkHfExporter::unfitReason(mx6, {64, 172}, false).empty());
        const std::string partial = qs::QuarkHfExporter::unfitReason(mx6, {64, 172});
        QVERIFY2(partial.find("ceil(172/32) = 6") != std::string::npos &&
                     partial.find("floor(in/32) = 5") != std::string::npos &&
                     partial.find("exclude this layer") != std::string::npos,
                 partial.c_str());
        const std::string odd = qs::QuarkHfExporter::unfitReason(mx4, {64, 171}, false);
        QVERIFY2(odd.find("mxfp4 packs 2 codes") != std::string::npos, odd.c_str());
        const std::string six = qs::QuarkHfExporter::unfitReason(mx6, {64, 174}, false);
        QVERIFY2(six.find("mxfp6_e2m3 packs 4 codes") != std::string::npos, six.c_str());
        qs::quant::QuantScheme staticInput = mx4;
        staticInput.input->isDynamic = false;
        QVERIFY(!qs::QuarkHfExporter::unfitReason(staticInput, {64, 64}).empty());
    }

    // Quark's custom_mode "awq" (AutoAWQ GEMM / vLLM): the tensors of Quark's quark-mode export
    // renamed weight -> qweight, weight_scale -> scales, weight_zero_point -> qzeros (Quark's
    // AWQ_SAVE_MAP), and its AwqConfig block. Checked against Quark 0.13 itself (docs/
    // exporters.md): its awq and quark exports of one AWQ-quantized model hold equal tensors
    // under those names, and its awq config has exactly these keys. Quark 0.13 with
    // transformers >= 5.6 also renames every other ".weight" to ".qweight" (a regression it
    // warns about); Quantscope keeps those names, as the loaders expect.
    void awqEqualsQuarkRenamed() {
        const QString out = qs::test::tempDir("awq") + "/export";
        qs::RunRequest req = request("uint4_wo_32", {"*down_proj", "lm_head"}, out);
        req.exportFormats = {"awq"};
        req.allowUnloadable = true; // gate/up as in the reference export
        qs::runQuantization(req);
        const QString refDir = m_reference + "/uint4_wo_32";
        const auto a = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        const auto r = qs::SafetensorsFile::open((refDir + "/model.safetensors").toStdString());
        QCOMPARE(a->header().tensors.size(), r->header().tensors.size());
        const std::map<std::string, std::string> renamed = {
            {"weight", "qweight"}, {"weight_scale", "scales"}, {"weight_zero_point", "qzeros"}};
        int quantized = 0;
        for (const qs::TensorInfo& ref : r->header().tensors) {
            const std::string layer = ref.name.substr(0, ref.name.rfind('.'));
            const std::string leaf = ref.name.substr(ref.name.rfind('.') + 1);
            const bool q = r->find(layer + ".weight_scale") != nullptr;
            const std::string name = q ? layer + "." + renamed.at(leaf) : ref.name;
            quantized += q && leaf == "weight";
            const qs::TensorInfo* t = a->find(name);
            QVERIFY2(t && t->dtype == ref.dtype && t->shape == ref.shape, name.c_str());
            QVERIFY2(std::memcmp(a->data(*t), r->data(ref), ref.byteSize()) == 0, name.c_str());
        }
        QCOMPARE(quantized, 30); // q/k/v/o/gate/up of 5 blocks
        const nlohmann::json refConfig = readJson(refDir + "/config.json")["quantization_config"];
        nlohmann::json expected;
        expected["bits"] = 4;
        expected["group_size"] = 32;
        expected["modules_to_not_convert"] = refConfig["exclude"];
        expected["quant_method"] = "awq";
        expected["version"] = "gemm";
        expected["zero_point"] = true; // uint4 is asymmetric
        expected["pack_method"] = "reorder";
        expected["export"] = refConfig["export"];
        QCOMPARE(readJson(out + "/config.json")["quantization_config"], expected);
    }

    // What awq cannot hold is refused before any work, naming layer and reason.
    void awqRefusals_data() {
        QTest::addColumn<QString>("scheme");
        QTest::addColumn<QString>("message");
        QTest::newRow("int8") << "int8"
                              << "int4/uint4 per-group weights only";
        QTest::newRow("int4 per channel") << "int4_wo_per_channel"
                                          << "int4/uint4 per-group weights only";
        QTest::newRow("activations") << "int4_wa_64"
                                     << "weights only";
    }
    void awqRefusals() {
        QFETCH(QString, scheme);
        QFETCH(QString, message);
        const QString out = qs::test::tempDir("awq-refused") + "/export";
        qs::RunRequest req =
            request(scheme.toStdString(), {"*down_proj", "*gate_proj", "*up_proj", "lm_head"}, out);
        req.exportFormats = {"awq"};
        try {
            qs::runQuantization(req);
            QFAIL("expected a refusal");
        } catch (const qs::Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("model.layers.0.self_attn.q_proj") != std::string::npos, m.c_str());
            QVERIFY2(m.find(message.toStdString()) != std::string::npos, m.c_str());
        }
        QVERIFY(!QFileInfo::exists(out));
    }

    // One AwqConfig for the model: a layer whose group size differs from the first one's.
    void awqMixedSchemesRefused() {
        const QString out = qs::test::tempDir("awq-mixed") + "/export";
        qs::QuantFlags flags;
        flags.quantScheme = "uint4_wo_32";
        flags.excludeLayers = {"*down_proj", "*gate_proj", "*up_proj", "lm_head"};
        flags.layerQuantSchemes = {{"*v_proj", "uint4_wo_64"}};
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.outDir = out.toStdString();
        req.exportFormats = {"awq"};
        try {
            qs::runQuantization(req);
            QFAIL("expected a refusal");
        } catch (const qs::Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("model.layers.0.self_attn.v_proj") != std::string::npos, m.c_str());
            QVERIFY2(m.find("one bits/group_size/zero_point") != std::string::npos, m.c_str());
        }
    }

    // A scheme the format cannot hold is refused before any work, naming format and layer.
    void unsupportedSchemeRefused() {
        const QString out = qs::test::tempDir("mx") + "/export";
        try {
            qs::runQuantization(request("w_mxfp8", {"lm_head"}, out));
            QFAIL("expected a refusal");
        } catch (const qs::Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("quark") != std::string::npos, m.c_str());
            QVERIFY2(m.find("model.layers.0.self_attn.q_proj") != std::string::npos, m.c_str());
            QVERIFY2(m.find("mxfp8_e4m3") != std::string::npos, m.c_str());
        }
        QVERIFY(!QFileInfo::exists(out));
        qs::RunRequest gguf = request("mxfp4_weight_only", {"lm_head"}, out);
        gguf.exportFormats = {"onnx"}; // ONNX has no MXFP4 DequantizeLinear
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::runQuantization(gguf));
        gguf.exportFormats = {"tflite"};
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::runQuantization(gguf));
        QVERIFY(!QFileInfo::exists(out));
    }

    void registryNames() {
        QCOMPARE(qs::canonicalExportFormat("hf_format", "t", "f"), std::string("quark"));
        QCOMPARE(qs::canonicalExportFormat("hf_fake", "t", "f"), std::string("fake"));
        QCOMPARE(qs::canonicalExportFormat("gguf", "t", "f"), std::string("gguf"));
        QCOMPARE(qs::canonicalExportFormat("awq", "t", "f"), std::string("awq"));
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::canonicalExportFormat("x", "t", "f"));
    }

    // A killed run's partial folder is removed by the next export to the same name once it is
    // older than the stale limit; a recent one (maybe a run in progress) is kept. An export
    // destroyed without commit leaves nothing behind.
    void partialFolders() {
        const QString base = qs::test::tempDir("partials");
        const QString out = base + "/model-q";
        const QString stale = base + "/.model-q.partial-deadbeef";
        const QString recent = base + "/.model-q.partial-cafecafe";
        QVERIFY(QDir().mkpath(stale) && QDir().mkpath(recent));
        QFile f(stale + "/tensors.spool");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        std::filesystem::last_write_time(stale.toStdString(),
                                         std::filesystem::last_write_time(stale.toStdString()) -
                                             std::chrono::hours(2));
        {
            qs::ExportFolder folder(out.toStdString());
            QVERIFY(QFileInfo::exists(QString::fromStdString(folder.tempDir())));
        }
        QVERIFY(!QFileInfo::exists(stale));
        QVERIFY(QFileInfo::exists(recent));
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(QDir(base).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList{".model-q.partial-cafecafe"});
    }
};

QS_TEST_GUILESS_MAIN(TestQuarkExport)
#include "tst_quarkexport.moc"
