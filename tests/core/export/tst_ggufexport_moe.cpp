// GGUF export of Qwen1.5-MoE as llama.cpp's qwen2moe architecture (io/GgufArchitecture.h), on
// ../shared/models/tiny-families/qwen2_moe. That checkpoint has a dense MLP in layer 1
// (mlp_only_layers [1]), which qwen2moe cannot express: the export refuses it by name before any
// work. The rest runs on the same checkpoint with layer 1's MLP replaced by a copy of layer 2's
// MoE block (allMoeCopy; scripts/make-qwen2moe-allmoe.py builds the same folder for
// scripts/check-gguf.sh): the file's metadata and a MoE block's tensors (names, ggml dims, types,
// the experts stacked in order, q/k rows in Hugging Face's order), and the file reopened by
// Quantscope's GGUF reader (the stacked experts split back into per-expert tensors) computes what
// the in-memory model computed.
#include "TestMain.h"
#include "TestSupport.h"

#include "export/ExportSize.h"
#include "io/GgufFile.h"
#include "io/GgufFolder.h"
#include "io/SafetensorsFile.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <fstream>

namespace {

const char* const kInt8Group32 = R"({"format": "quantscope-recipe", "version": 1,
 "global": {"weight": {"dtype": "int8", "qscheme": "per_group", "ch_axis": 1,
                       "is_dynamic": false, "symmetric": true, "round_method": "half_even",
                       "scale_type": "float", "observer_cls": "PerGroupMinMaxObserver",
                       "group_size": 32},
            "input_tensors": null, "output_tensors": null, "bias": null}})";

std::string sourceDir() {
    return qs::test::sharedPath("models/tiny-families/qwen2_moe").toStdString();
}

// The shared checkpoint with layer 1's dense MLP replaced by a copy of layer 2's mlp.* (router,
// experts, shared expert and its gate) and mlp_only_layers [], written under `out`.
std::string allMoeCopy(const QString& out) {
    const QString src = QString::fromStdString(sourceDir());
    QDir().mkpath(out);
    for (const QString& f : QDir(src).entryList(QDir::Files))
        if (f != "config.json" && f != "model.safetensors" && !f.startsWith("reference"))
            QFile::copy(src + "/" + f, out + "/" + f);
    std::ifstream in((src + "/config.json").toStdString());
    nlohmann::json cfg = nlohmann::json::parse(in);
    cfg["mlp_only_layers"] = nlohmann::json::array();
    std::ofstream((out + "/config.json").toStdString()) << cfg.dump(2);

    const auto file = qs::SafetensorsFile::open((src + "/model.safetensors").toStdString());
    std::vector<qs::TensorInfo> layout;
    std::vector<const qs::TensorInfo*> from;
    for (const qs::TensorInfo& t : file->header().tensors) {
        if (t.name.rfind("model.layers.1.mlp.", 0) == 0)
            continue;
        layout.push_back(t);
        from.push_back(&t);
        if (t.name.rfind("model.layers.2.mlp.", 0) == 0) {
            qs::TensorInfo copy = t;
            copy.name = "model.layers.1.mlp." + t.name.substr(std::strlen("model.layers.2.mlp."));
            layout.push_back(copy);
            from.push_back(&t);
        }
    }
    qs::SafetensorsWriter writer((out + "/model.safetensors").toStdString(), layout,
                                 {{"format", "pt"}});
    for (const qs::TensorInfo* t : from)
        writer.writeNext(file->data(*t), t->byteSize());
    writer.commit();
    return out.toStdString();
}

qs::QuantizationOutcome exportGguf(const std::string& model, qs::Recipe recipe,
                                   const std::string& type, const QString& out) {
    recipe.evaluation.dataPath = qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
    recipe.evaluation.seqLen = 64;
    recipe.evaluation.maxWindows = 2;
    qs::RunRequest req;
    req.modelDir = model;
    req.recipe = recipe;
    req.evaluate = true;
    req.fidelity = false;
    req.outDir = out.toStdString();
    req.exportFormats = {"gguf"};
    req.exportOptions["gguf_type"] = type;
    return qs::runQuantization(req);
}

qs::Recipe noQuantization() {
    return qs::Recipe::fromJson(
        nlohmann::json::parse(R"({"format": "quantscope-recipe", "version": 1})"), "test");
}

std::vector<float> floatsOf(const qs::SafetensorsFile& f, const std::string& name) {
    const qs::TensorInfo* t = f.find(name);
    if (!t)
        qFatal("no %s", name.c_str());
    std::vector<float> v(t->byteSize() / sizeof(float));
    std::memcpy(v.data(), f.data(*t), t->byteSize());
    return v;
}

double reopenedPerplexity(const QString& gguf, const qs::QuantizationOutcome& o) {
    qs::EvalRequest eval;
    eval.evaluation = o.recipe.evaluation;
    // Opened as every command opens a .gguf: converted once into a checkpoint folder.
    return qs::evaluateModelOnText(qs::resolveModelFolder(gguf.toStdString()), eval).perplexity;
}

} // namespace

class TestGgufExportMoe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The shared checkpoint's dense layer 1 cannot be written as qwen2moe: refused by name, and
    // nothing is written.
    void denseLayerRefused() {
        const QString out = qs::test::tempDir("gguf-moe-dense") + "/export";
        try {
            exportGguf(sourceDir(), noQuantization(), "f32", out);
            QFAIL("exported a dense layer as qwen2moe");
        } catch (const qs::Error& e) {
            const QString what = QString::fromUtf8(e.what());
            QVERIFY2(what.contains("layer 1 has a dense MLP") && what.contains("qwen2moe"),
                     qPrintable(what));
        }
        QVERIFY(!QFileInfo::exists(out + "/model.gguf"));
    }

    // norm_topk_prob true: llama.cpp's qwen2moe never renormalises the chosen weights.
    void renormalisedTopKRefused() {
        const QString dir = qs::test::tempDir("gguf-moe-norm") + "/model";
        allMoeCopy(dir);
        std::ifstream in((dir + "/config.json").toStdString());
        nlohmann::json cfg = nlohmann::json::parse(in);
        cfg["norm_topk_prob"] = true;
        std::ofstream((dir + "/config.json").toStdString()) << cfg.dump(2);
        try {
            exportGguf(dir.toStdString(), noQuantization(), "f32", dir + "/../export");
            QFAIL("exported norm_topk_prob true as qwen2moe");
        } catch (const qs::Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains("norm_topk_prob true"), e.what());
        }
    }

    // F32: the metadata llama.cpp's qwen2moe loads, a MoE block's tensors, the experts stacked
    // in expert order with the source's floats, q/k rows unpermuted (qwen2moe rotates halves as
    // Hugging Face does). Reopened, the perplexity equals the in-memory model's bit for bit: the
    // file holds the source's fp32 weights exactly (F32 is a copy), the reader splits the experts
    // back into the same per-expert tensors, and the engine runs the same computation on the
    // same floats in the same shapes.
    void f32LayoutAndReopened() {
        const QString tmp = qs::test::tempDir("gguf-moe-f32");
        const std::string model = allMoeCopy(tmp + "/model");
        const qs::QuantizationOutcome o = exportGguf(model, noQuantization(), "f32", tmp + "/out");
        const QString gguf = tmp + "/out/model.gguf";
        const auto file = qs::GgufFile::open(gguf.toStdString());
        const qs::GgufHeader& h = file->header();
        auto number = [&](const std::string& key) {
            const qs::GgufValue* v = h.find(key);
            if (!v)
                qFatal("no %s", key.c_str());
            return v->toNumber(gguf.toStdString(), key);
        };
        QCOMPARE(QString::fromStdString(h.find("general.architecture")->s), QString("qwen2moe"));
        QCOMPARE(number("qwen2moe.block_count"), 3.0);
        QCOMPARE(number("qwen2moe.embedding_length"), 64.0);
        QCOMPARE(number("qwen2moe.feed_forward_length"), 128.0);
        QCOMPARE(number("qwen2moe.attention.head_count"), 4.0);
        QCOMPARE(number("qwen2moe.attention.head_count_kv"), 2.0);
        QCOMPARE(number("qwen2moe.context_length"), 256.0);
        QCOMPARE(number("qwen2moe.expert_count"), 4.0);
        QCOMPARE(number("qwen2moe.expert_used_count"), 2.0);
        QCOMPARE(number("qwen2moe.expert_feed_forward_length"), 64.0);
        QCOMPARE(number("qwen2moe.expert_shared_feed_forward_length"), 96.0);
        QCOMPARE(float(number("qwen2moe.rope.freq_base")), 1e6f); // from rope_parameters
        QCOMPARE(float(number("qwen2moe.attention.layer_norm_rms_epsilon")), 1e-6f);
        QVERIFY(!h.find("llama.block_count"));

        struct Want {
            const char* name;
            std::vector<int64_t> dims; // ggml ne
        };
        const std::vector<Want> block = {{"attn_norm.weight", {64}},
                                         {"attn_q.weight", {64, 64}},
                                         {"attn_q.bias", {64}},
                                         {"attn_k.weight", {64, 32}},
                                         {"attn_k.bias", {32}},
                                         {"attn_v.weight", {64, 32}},
                                         {"attn_v.bias", {32}},
                                         {"attn_output.weight", {64, 64}},
                                         {"ffn_norm.weight", {64}},
                                         {"ffn_gate_inp.weight", {64, 4}},
                                         {"ffn_gate_exps.weight", {64, 64, 4}},
                                         {"ffn_up_exps.weight", {64, 64, 4}},
                                         {"ffn_down_exps.weight", {64, 64, 4}},
                                         {"ffn_gate_inp_shexp.weight", {64, 1}},
                                         {"ffn_gate_shexp.weight", {64, 96}},
                                         {"ffn_up_shexp.weight", {64, 96}},
                                         {"ffn_down_shexp.weight", {96, 64}}};
        for (int b = 0; b < 3; ++b)
            for (const Want& w : block) {
                const std::string n = "blk." + std::to_string(b) + "." + w.name;
                const qs::GgufTensorInfo* t = file->find(n);
                QVERIFY2(t, n.c_str());
                QVERIFY2(t->dims == w.dims, n.c_str());
                QVERIFY2(t->type == uint32_t(qs::GgmlType::F32), n.c_str());
            }
        QCOMPARE(int(h.tensors.size()), 3 * int(block.size()) + 3);
        QVERIFY(file->find("output.weight") && file->find("token_embd.weight"));

        const auto source = qs::SafetensorsFile::open(model + "/model.safetensors");
        for (const char* proj : {"gate", "up", "down"}) {
            const std::vector<float> stacked =
                file->dequantize(*file->find(std::string("blk.2.ffn_") + proj + "_exps.weight"));
            std::vector<float> want;
            for (int e = 0; e < 4; ++e) {
                const std::vector<float> x =
                    floatsOf(*source, "model.layers.2.mlp.experts." + std::to_string(e) + "." +
                                          proj + "_proj.weight");
                want.insert(want.end(), x.begin(), x.end());
            }
            QVERIFY2(stacked == want, proj);
        }
        QVERIFY(file->dequantize(*file->find("blk.0.attn_q.weight")) ==
                floatsOf(*source, "model.layers.0.self_attn.q_proj.weight"));
        QVERIFY(file->dequantize(*file->find("blk.0.attn_k.weight")) ==
                floatsOf(*source, "model.layers.0.self_attn.k_proj.weight"));

        // The size accounting predicts the file to the byte.
        const qs::ExportSizeReport size =
            qs::exportSize(model, noQuantization(), {"gguf"}, {{"gguf_type", "f32"}});
        QCOMPARE(size.format("gguf")->files.at(0).second, uint64_t(QFileInfo(gguf).size()));

        QVERIFY(o.perplexity.has_value());
        const double reopened = reopenedPerplexity(gguf, o);
        qInfo("f32: reopened %.17g, in memory %.17g", reopened, o.perplexity->perplexity);
        QVERIFY2(reopened == o.perplexity->perplexity,
                 qPrintable(QString("reopened %1, in memory %2")
                                .arg(reopened, 0, 'g', 17)
                                .arg(o.perplexity->perplexity, 0, 'g', 17)));
    }

    // The engine's codes as ggml blocks (int8 per group of 32 -> Q8_0, int4_wo_32 -> Q4_0),
    // every expert of a stacked tensor in the block of its plan, routers and shared-expert gates
    // F32. Reopened, the perplexity equals the in-memory quantized model's within the f16
    // rounding of the scales (the one difference, docs/exporters.md).
    void codesAsBlocks_data() {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("ggml");
        QTest::newRow("int8 g32 as q8_0") << "int8_g32"
                                          << "auto" << int(qs::GgmlType::Q8_0);
        QTest::newRow("int4_wo_32 as q4_0") << "int4_wo_32"
                                            << "auto" << int(qs::GgmlType::Q4_0);
    }

    void codesAsBlocks() {
        QFETCH(QString, recipe);
        QFETCH(QString, type);
        QFETCH(int, ggml);
        const QString tmp = qs::test::tempDir("gguf-moe-" + recipe);
        const std::string model = allMoeCopy(tmp + "/model");
        qs::Recipe r;
        if (recipe == "int8_g32") {
            r = qs::Recipe::fromJson(nlohmann::json::parse(kInt8Group32), "test");
        } else {
            qs::QuantFlags flags;
            flags.quantScheme = recipe.toStdString();
            r = qs::recipeFromFlags(flags);
        }
        const qs::QuantizationOutcome o = exportGguf(model, r, type.toStdString(), tmp + "/out");
        const QString gguf = tmp + "/out/model.gguf";
        const auto file = qs::GgufFile::open(gguf.toStdString());
        for (int b = 0; b < 3; ++b) {
            const std::string blk = "blk." + std::to_string(b) + ".";
            for (const char* n : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp",
                                  "ffn_up_shexp", "attn_q", "attn_output"})
                QVERIFY2(file->find(blk + n + ".weight")->type == uint32_t(ggml), n);
            // 96 inputs: three blocks of 32
            QVERIFY(file->find(blk + "ffn_down_shexp.weight")->type == uint32_t(ggml));
            for (const char* n : {"ffn_gate_inp", "ffn_gate_inp_shexp"})
                QVERIFY2(file->find(blk + n + ".weight")->type == uint32_t(qs::GgmlType::F32), n);
            QVERIFY((file->find(blk + "ffn_gate_exps.weight")->dims ==
                     std::vector<int64_t>{64, 64, 4}));
        }
        const qs::ExportSizeReport size = qs::exportSize(model, r, {"gguf"}, {});
        QCOMPARE(size.format("gguf")->files.at(0).second, uint64_t(QFileInfo(gguf).size()));

        QVERIFY(o.perplexity.has_value());
        const double reopened = reopenedPerplexity(gguf, o);
        qInfo("%s: reopened %.12g, in memory %.12g", qPrintable(recipe), reopened,
              o.perplexity->perplexity);
        QVERIFY2(std::fabs(reopened / o.perplexity->perplexity - 1) < 1e-3,
                 qPrintable(QString("reopened %1, in memory %2")
                                .arg(reopened, 0, 'g', 12)
                                .arg(o.perplexity->perplexity, 0, 'g', 12)));
    }
};

QS_TEST_APPLESS_MAIN(TestGgufExportMoe)
#include "tst_ggufexport_moe.moc"
