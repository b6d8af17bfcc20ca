// The export format table (export/ExportFormat.h, FormatWriter.h): one record per format with
// its names, its options as data and its engine side; option maps checked against what the
// formats declare.
#include "TestMain.h"
#include "export/FormatWriter.h"
#include "export/GgufFormat.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

#include <QtTest>

#include <string>
#include <vector>

class TestExportFormats : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void oneRecordPerFormat() {
        std::vector<std::string> names, targets;
        for (const qs::ExportFormat& f : qs::exportFormats()) {
            names.push_back(f.name);
            targets.push_back(f.recipeTarget);
            QVERIFY(f.available);
            QCOMPARE(qs::formatWriter(f.name).format.name, f.name);
        }
        QCOMPARE(names, (std::vector<std::string>{"fake", "quark", "awq", "gguf", "onnx"}));
        // A recipe (floor 5) cannot read the table (floor 7): its list of targets must agree.
        QCOMPARE(targets, qs::Recipe::knownExportTargets());
        QCOMPARE(qs::canonicalExportFormat("hf_format", "t", "f"), std::string("quark"));
        QCOMPARE(qs::canonicalExportFormat("hf_fake", "t", "f"), std::string("fake"));
        QCOMPARE(qs::formatWriter("hf_format").format.name, std::string("quark"));
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::formatWriter("tflite"));
        // Read back where Quantscope has a reader: checkpoint folders and GGUF files.
        QVERIFY(qs::formatWriter("fake").reader && qs::formatWriter("quark").reader &&
                qs::formatWriter("gguf").reader);
        QVERIFY(!qs::formatWriter("awq").reader && !qs::formatWriter("onnx").reader);
        QCOMPARE(std::string(qs::formatWriter("fake").reader("/x/out")), std::string("/x/out"));
    }

    void unknownFormatIsItsOwnProblem() {
        qs::Recipe recipe;
        qs::ModuleNode tree;
        const std::vector<std::string> skipped;
        const qs::ExportOptions options;
        const qs::ExportCheck check{recipe, tree, skipped, true, nullptr, options};
        QCOMPARE(qs::exportProblems("tflite", check),
                 std::vector<std::string>{"unknown export format 'tflite'"});
        QVERIFY(qs::exportProblems("gguf", check).empty());
    }

    // GGUF declares its weight type; the values are the type table's.
    void optionsAsData() {
        const qs::ExportFormat& gguf = *qs::findExportFormat("gguf");
        const qs::ExportOption* type = qs::findExportOption(gguf, "gguf_type");
        QVERIFY(type);
        QCOMPARE(type->allowed, qs::ggufTypeNames());
        QCOMPARE(type->defaultValue, std::string("auto"));
        QVERIFY(!qs::findExportOption(*qs::findExportFormat("quark"), "gguf_type"));
        QCOMPARE(qs::exportOptionValue(gguf, {}, "gguf_type"), std::string("auto"));
        QCOMPARE(qs::exportOptionValue(gguf, {{"gguf_type", "q4_0"}}, "gguf_type"),
                 std::string("q4_0"));
        QVERIFY(!qs::ggufTypeOf({}));
        QCOMPARE(*qs::ggufTypeOf({{"gguf_type", "q6_k"}}), qs::GgmlType::Q6_K);
    }

    void optionMapsChecked() {
        qs::checkExportOptions(qs::ExportOptions{}, "cli");
        qs::checkExportOptions({{"gguf_type", "q8_0"}}, "cli");
        qs::checkExportOptions({{"gguf_type", "Q4_K"}}, "cli"); // as --gguf-type takes it
        try {
            qs::checkExportOptions({{"gguf_type", "q9"}}, "cli");
            QFAIL("accepted");
        } catch (const qs::Error& e) {
            QCOMPARE(e.source(), std::string("cli"));
            QCOMPARE(e.field(), std::string("gguf_type"));
            QVERIFY2(std::string(e.reason()).find("'q9'") != std::string::npos, e.what());
            QVERIFY2(std::string(e.reason()).find("auto, q8_0, q4_0") != std::string::npos,
                     e.what());
        }
        try {
            qs::checkExportOptions({{"onnx_opset", "21"}}, "cli");
            QFAIL("accepted");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("onnx_opset"));
            QVERIFY2(std::string(e.reason()).find("gguf_type (gguf)") != std::string::npos,
                     e.what());
        }
    }
};

QS_TEST_GUILESS_MAIN(TestExportFormats)
#include "tst_exportformats.moc"
