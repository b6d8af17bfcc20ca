// Family capabilities (model/ModelFamily.h): each family declares what the rotation and the
// exporters may do with it, and the refusals of those passes name the families that declare it.
#include "TestMain.h"
#include "export/OnnxExporter.h"
#include "model/ModelFamily.h"

#include <QtTest>

#include <string>
#include <vector>

class TestFamilyCapabilities : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void declaredByTheFamilies() {
        const std::vector<std::string> llamaStyle = {"llama", "mistral", "qwen2", "qwen3"};
        QCOMPARE(qs::familiesWith(&qs::FamilyCapabilities::rotation), llamaStyle);
        QCOMPARE(qs::familiesWith(&qs::FamilyCapabilities::onnx), llamaStyle);
        QCOMPARE(qs::familiesWith(&qs::FamilyCapabilities::gguf),
                 (std::vector<std::string>{"llama", "qwen2_moe"}));
        QVERIFY(qs::findFamily("qwen3_moe"));
        QVERIFY(!qs::findFamily("qwen3_moe")->capabilities().rotation);
        QVERIFY(!qs::findFamily("gpt2"));
    }

    // The refusal lists the declaring families, in the registry's order.
    void onnxRefusalNamesThem() {
        qs::ModelConfig c;
        c.modelType = "gemma2";
        QCOMPARE(QString::fromStdString(qs::OnnxExporter::modelReason(c)),
                 QStringLiteral("the ONNX exporter writes the Llama-style decoders llama, "
                                "mistral, qwen2 and qwen3; 'gemma2' is not one of them (use "
                                "--format fake or quark)"));
        c.modelType = "gpt2"; // no family at all
        QVERIFY(QString::fromStdString(qs::OnnxExporter::modelReason(c)).contains("'gpt2'"));
    }
};

QS_TEST_GUILESS_MAIN(TestFamilyCapabilities)
#include "tst_familycapabilities.moc"
