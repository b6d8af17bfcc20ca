// Quark hf_format exports of the mixture-of-experts families (../shared/models/tiny-families):
// the config names what Quark's loaders must leave in float. Quark's templates
// (quark/torch/quantization/config/template.py) exclude "lm_head" and the routers, "*.gate" for
// mixtral and qwen3_moe, plus "*.shared_expert_gate" for qwen2_moe: those are nn.Linear in
// transformers, and a loader quantizes every Linear the config does not exclude. Quantscope
// keeps them in float (they are not among the quantizable linears) and names them exactly.
#include "TestMain.h"
#include "TestSupport.h"
#include "TinyExportRun.h"

#include "io/SafetensorsFile.h"
#include "model/ModelLoader.h"
#include "run/QuantizationRun.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <fstream>

namespace {

nlohmann::json readJson(const QString& path) {
    std::ifstream in(path.toStdString());
    return nlohmann::json::parse(in);
}

} // namespace

class TestQuarkExportMoe : public QObject {
    Q_OBJECT

private:
    static qs::QuantizationOutcome exportQuark(const std::string& dir,
                                               const std::vector<std::string>& exclude,
                                               const QString& out) {
        return qs::runQuantization(qs::test::tinyUint4Export(dir, out, "quark", exclude));
    }

private Q_SLOTS:
    // Every router (and shared-expert gate) in `exclude` by name after lm_head, stored in float
    // as the source has it; every expert, shared-expert and attention linear quantized (a
    // uint4 weight and its scales); the export reopens to the perplexity of the in-memory
    // quantization.
    void routersExcludedByName_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QStringList>("routers");
        QTest::addColumn<int>("skipped");
        QTest::newRow("mixtral") << "mixtral"
                                 << QStringList{"model.layers.0.block_sparse_moe.gate",
                                                "model.layers.1.block_sparse_moe.gate",
                                                "model.layers.2.block_sparse_moe.gate"}
                                 << 0;
        QTest::newRow("qwen3_moe")
            << "qwen3_moe"
            << QStringList{"model.layers.0.mlp.gate", "model.layers.1.mlp.gate",
                           "model.layers.2.mlp.gate"}
            << 0;
        // layer 1 is dense (mlp_only_layers [1]): no router there
        QTest::newRow("qwen2_moe")
            << "qwen2_moe"
            << QStringList{"model.layers.0.mlp.gate", "model.layers.0.mlp.shared_expert_gate",
                           "model.layers.2.mlp.gate", "model.layers.2.mlp.shared_expert_gate"}
            << 0;
        // layer 0 is dense (first_k_dense_replace 1); q_b_proj (40 inputs), kv_b_proj (24) and
        // o_proj (48) of each layer are skipped as unfit
        QTest::newRow("deepseek_v3")
            << "deepseek_v3" << QStringList{"model.layers.1.mlp.gate", "model.layers.2.mlp.gate"}
            << 9;
        // experts stored fused (gate_up_proj interleaved, down_proj, with biases): written per
        // expert under Quark's names; the routers carry a bias
        QTest::newRow("gpt_oss") << "gpt_oss"
                                 << QStringList{"model.layers.0.mlp.router",
                                                "model.layers.1.mlp.router",
                                                "model.layers.2.mlp.router"}
                                 << 0;
        // experts stored fused (feed_forward.experts.gate_up_proj / down_proj), written per
        // expert as Quark writes them, fused back when the export is reopened; layers 0 and 2
        // are dense
        QTest::newRow("llama4_text") << "llama4_text"
                                     << QStringList{"model.layers.1.feed_forward.router",
                                                    "model.layers.3.feed_forward.router"}
                                     << 0;
    }

    void routersExcludedByName() {
        QFETCH(QString, folder);
        QFETCH(QStringList, routers);
        QFETCH(int, skipped);
        const std::string dir =
            qs::test::sharedPath("models/tiny-families/" + folder).toStdString();
        const QString out = qs::test::tempDir("moe-" + folder) + "/export";
        const qs::QuantizationOutcome o = exportQuark(dir, {}, out);
        std::vector<std::string> unfitNames; // o.skipped: "<layer>: <reason>"
        for (const std::string& s : o.skipped)
            unfitNames.push_back(s.substr(0, s.find(':')));
        QCOMPARE(int(unfitNames.size()), skipped);

        // the unfit layers by name (in the file's order: sorted within a block), then the
        // head, then the routers
        nlohmann::json want = nlohmann::json::array();
        std::vector<std::string> sorted = unfitNames;
        std::sort(sorted.begin(), sorted.end());
        for (const std::string& s : sorted)
            want.push_back(s);
        want.push_back("lm_head");
        for (const QString& r : routers)
            want.push_back(r.toStdString());
        QCOMPARE(readJson(out + "/config.json")["quantization_config"]["exclude"], want);

        const auto file = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        const auto source = qs::SafetensorsFile::open(dir + "/model.safetensors");
        for (const QString& r : routers) {
            const std::string w = r.toStdString() + ".weight";
            QVERIFY2(file->find(w) && file->find(w)->dtype == qs::DType::F32, w.c_str());
            QVERIFY2(!file->find(r.toStdString() + ".weight_scale"), w.c_str());
            QCOMPARE(file->find(w)->shape, source->find(w)->shape);
        }
        std::vector<const qs::ModuleNode*> linears;
        const qs::ModuleNode tree = qs::openModelHandle(dir).moduleTree();
        tree.collect("linear", linears);
        int quantized = 0;
        for (const qs::ModuleNode* n : linears) {
            if (n->blockIndex < 0)
                continue;
            const std::string w = n->name + ".weight";
            const bool unfit =
                std::find(unfitNames.begin(), unfitNames.end(), n->name) != unfitNames.end();
            QVERIFY2(file->find(w) && (file->find(w)->dtype == qs::DType::F32) == unfit, w.c_str());
            QVERIFY2(bool(file->find(n->name + ".weight_scale")) != unfit, w.c_str());
            quantized += unfit ? 0 : 1;
        }
        QVERIFY(quantized > 0);
        if (folder == "gpt_oss") {
            // no fused tensor left; the experts' biases, the routers' biases and the attention
            // sinks stored in float as the source has them
            for (const char* fusedName :
                 {"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"})
                QVERIFY(!file->find(std::string("model.layers.0.mlp.experts.") + fusedName));
            for (const std::string b :
                 {"model.layers.0.mlp.experts.3.gate_proj.bias",
                  "model.layers.0.mlp.experts.3.up_proj.bias",
                  "model.layers.2.mlp.experts.0.down_proj.bias", "model.layers.1.mlp.router.bias",
                  "model.layers.1.self_attn.sinks"})
                QVERIFY2(file->find(b) && file->find(b)->dtype == qs::DType::F32, b.c_str());
        }

        // Reopened (io/QuarkFolder dequantizes the codes), the export computes what the run's
        // fake-quantized model computed: the same codes and scales, the routers unchanged.
        qs::test::verifyReopenedPerplexity(out, o);
    }

    // A recipe exclusion of the shared experts (what a user writes to keep them in float)
    // reaches them in the export too: named in `exclude`, stored as the source has them.
    void sharedExpertExclusion() {
        const std::string dir =
            qs::test::sharedPath("models/tiny-families/qwen2_moe").toStdString();
        const QString out = qs::test::tempDir("moe-shared") + "/export";
        exportQuark(dir, {"*shared_expert.*"}, out);
        const nlohmann::json exclude =
            readJson(out + "/config.json")["quantization_config"]["exclude"];
        const auto file = qs::SafetensorsFile::open((out + "/model.safetensors").toStdString());
        int named = 0;
        for (const char* layer : {"0", "2"})
            for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
                const std::string name =
                    std::string("model.layers.") + layer + ".mlp.shared_expert." + proj;
                named += std::count(exclude.begin(), exclude.end(), nlohmann::json(name));
                QVERIFY2(file->find(name + ".weight")->dtype == qs::DType::F32, name.c_str());
                QVERIFY2(!file->find(name + ".weight_scale"), name.c_str());
            }
        QCOMPARE(named, 6);
        QVERIFY(file->find("model.layers.0.mlp.experts.0.down_proj.weight_scale"));
    }
};

QS_TEST_APPLESS_MAIN(TestQuarkExportMoe)
#include "tst_quarkexport_moe.moc"
