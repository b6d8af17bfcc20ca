// quantscope-cli quantize --format / --model_export and inspect of a Quark export, as a user
// runs them: exit codes, refusals before any work, files written.
#include "TestMain.h"
#include "TestSupport.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

class TestCliExport : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    static Run cli(const QStringList& args) { return qs::test::runCli(args); }

    QString m_model;

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        qputenv("XDG_CACHE_HOME", qs::test::tempDir("cache").toUtf8());
    }

    void quarkAliasWritesAndReopens() {
        const QString out = qs::test::tempDir("alias") + "/q";
        const Run r = cli({"quantize", m_model, "--quant-scheme", "uint4_wo_32", "--exclude-layers",
                           "*down_proj", "*gate_proj", "*up_proj", "lm_head", "--out", out,
                           "--model_export", "hf_format"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        for (const char* f :
             {"model.safetensors", "config.json", "quantscope_recipe.json", "tokenizer.model"})
            QVERIFY2(QFileInfo::exists(out + "/" + f), f);
        const Run i = cli({"inspect", out, "--json"});
        QCOMPARE(i.exitCode, 0);
        const QJsonObject q =
            QJsonDocument::fromJson(i.out).object()["quark_real_quantized"].toObject();
        QCOMPARE(q["pack_method"].toString(), QString("reorder"));
        QCOMPARE(q["layers"].toArray().size(), 20); // q/k/v/o of 5 blocks
        const Run text = cli({"inspect", out});
        QVERIFY(text.out.contains("dequantized on load"));
    }

    // MXFP4 weights and activations (dynamic, config only); down_proj (172 inputs, a partial
    // last block) only with --allow-unloadable, as Quark writes it: all 35 linears listed.
    void mxfp4ToQuark() {
        const QString out = qs::test::tempDir("mxfp4") + "/q";
        const Run r = cli({"quantize", m_model, "--quant-scheme", "mxfp4", "--exclude-layers",
                           "lm_head", "--out", out, "--format", "quark", "--allow-unloadable"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const Run i = cli({"inspect", out, "--json"});
        QCOMPARE(i.exitCode, 0);
        const QJsonArray layers = QJsonDocument::fromJson(i.out)
                                      .object()["quark_real_quantized"]
                                      .toObject()["layers"]
                                      .toArray();
        QCOMPARE(layers.size(), 35); // 7 per block x 5
        QVERIFY2(layers[0].toString().contains("mxfp4"), qPrintable(layers[0].toString()));
    }

    void severalFormatsGoToSubfolders() {
        const QString out = qs::test::tempDir("several") + "/q";
        const Run r =
            cli({"quantize", m_model, "--quant-scheme", "int4_wo_32", "--exclude-layers", "*mlp*",
                 "lm_head", "--out", out, "--format", "fake", "--format", "quark"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(QFileInfo::exists(out + "/fake/model.safetensors"));
        QVERIFY(QFileInfo::exists(out + "/quark/model.safetensors"));
        QVERIFY(QFileInfo::exists(out + "/quark/quantscope_recipe.json"));
    }

    void refusedBeforeWork_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("mxfp4 to onnx")
            << QStringList{"--quant-scheme", "mxfp4_weight_only", "--format", "onnx"}
            << "no ONNX DequantizeLinear type";
        QTest::newRow("unknown format")
            << QStringList{"--quant-scheme", "int8", "--format", "tflite"}
            << "unknown export format 'tflite'";
        QTest::newRow("mxfp8 to quark")
            << QStringList{"--quant-scheme", "w_mxfp8", "--format", "quark"}
            << "o_proj and 31 more layers: mxfp8_e4m3 weights are not written";
        QTest::newRow("mxfp4 partial block")
            << QStringList{"--quant-scheme", "mxfp4", "--format", "quark"}
            << "down_proj and 1 more layers: mxfp4 stores ceil(172/32) = 6";
        QTest::newRow("floor-ceil columns")
            << QStringList{"--quant-scheme", "uint4_wo_32", "--exclude-layers",
                           "*down_proj",     "--format",    "quark"}
            << "floor(out/8) = 21";
    }
    void refusedBeforeWork() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const QString base = qs::test::tempDir("refused-" + QString(QTest::currentDataTag()));
        const Run r = cli(QStringList{"quantize", m_model, "--out", base + "/q"} + args);
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
        QVERIFY(
            QDir(base).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).isEmpty());
    }

    void formatNeedsOut() {
        const Run r = cli({"quantize", m_model, "--quant-scheme", "int8", "--format", "quark"});
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("--out"), r.err.constData());
    }
};

QS_TEST_GUILESS_MAIN(TestCliExport)
#include "tst_cli_export.moc"
