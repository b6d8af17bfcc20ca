// quantscope-cli recipe --size, as a user runs it: the JSON report (effective_bits and its
// formats), the text tables, the size of a file quantize then writes, and the errors (exit code,
// the file, field and reason named).
#include "TestMain.h"
#include "TestSupport.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

class TestCliSize : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    static Run cli(const QStringList& args) { return qs::test::runCli(args); }

    QString m_model;
    QString m_recipe; // uint4_wo_32 with the MLP excluded: every format holds it on stories260K

    static QString writeRecipe(const QString& name, const QByteArray& json) {
        const QString path = qs::test::tempDir("recipes") + "/" + name;
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly) || f.write(json) != json.size())
            qFatal("cannot write %s", qPrintable(path));
        return path;
    }

    static QJsonObject formatOf(const QJsonObject& report, const QString& name) {
        for (const QJsonValue& f : report["formats"].toArray())
            if (f.toObject()["format"].toString() == name)
                return f.toObject();
        return {};
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        qputenv("XDG_CACHE_HOME", qs::test::tempDir("cache").toUtf8());
        m_recipe = writeRecipe("int4.json", R"({"format": "quantscope-recipe", "version": 1,
            "global": "int4_wo_32", "exclude": ["*mlp*", "lm_head"]})");
    }

    void jsonReport() {
        const Run r = cli({"recipe", "--size", m_recipe, "--model", m_model, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["layers"].toArray().size(), 35); // 7 linears x 5 blocks
        QCOMPARE(j["formats"].toArray().size(), 3);
        // effective_bits is Quark's bits per block linear weight: the attention projections in
        // int4 (32 x 4 bits + a fp32 scale and a 4-bit zero point packed in int32 per 32) and
        // the MLP in fp32.
        const QJsonObject quark = formatOf(j, "quark");
        QVERIFY(quark["holds"].toBool());
        QCOMPARE(j["effective_bits"].toDouble(), quark["bits_per_linear_weight"].toDouble());
        const double attention = 2 * 64 * 64 + 2 * 32 * 64; // q, o [64, 64]; k, v [32, 64]
        const double mlp = 3 * 64 * 172;
        const double expected = (attention * (4 + 36.0 / 32) + mlp * 32) / (attention + mlp);
        QVERIFY2(std::abs(j["effective_bits"].toDouble() - expected) < 1e-12,
                 qPrintable(QString::number(j["effective_bits"].toDouble(), 'g', 17)));
        QCOMPARE(quark["bits_per_quantized_weight"].toDouble(), 4 + 36.0 / 32);
        QCOMPARE(formatOf(j, "gguf")["bits_per_quantized_weight"].toDouble(), 4.5); // Q4_0
        QVERIFY(j["effective_bits_definition"].toString().contains("Quark hf_format"));
    }

    void textReport() {
        const Run r = cli({"recipe", "--size", m_recipe, "--model", m_model});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        for (const char* s : {"\nquark\n", "\ngguf\n", "\nonnx\n", "file model.safetensors",
                              "(exact)", "file model.gguf", "(at least)", "effective_bits"})
            QVERIFY2(r.out.contains(s), s);
    }

    // The file quantize writes has the size the report predicted.
    void predictsTheFile() {
        const QString out = qs::test::tempDir("written") + "/q";
        const Run q = cli({"quantize", m_model, "--recipe", m_recipe, "--format", "quark", "--out",
                           out, "--quiet"});
        QVERIFY2(q.exitCode == 0, q.err.constData());
        const Run r = cli(
            {"recipe", "--size", m_recipe, "--model", m_model, "--format", "hf_format", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject quark = formatOf(QJsonDocument::fromJson(r.out).object(), "quark");
        QVERIFY(quark["files_exact"].toBool());
        const QJsonObject file = quark["files"].toArray()[0].toObject();
        QCOMPARE(file["name"].toString(), QString("model.safetensors"));
        QCOMPARE(qint64(file["bytes"].toDouble()), QFileInfo(out + "/model.safetensors").size());
    }

    // A format that cannot hold the recipe says why and has no sizes; the others do.
    void refusedFormat() {
        const QString mx = writeRecipe("mx.json", R"({"format": "quantscope-recipe",
            "version": 1, "global": "mxfp4_weight_only"})");
        const Run r = cli({"recipe", "--size", mx, "--model", m_model, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonObject onnx = formatOf(j, "onnx");
        QVERIFY(!onnx["holds"].toBool());
        QVERIFY(onnx["problems"].toArray()[0].toString().contains("no ONNX DequantizeLinear type"));
        QVERIFY(!onnx.contains("bits_per_linear_weight"));
        // Quark writes MX with a partial last block (down_proj: 172 inputs), which its loaders
        // refuse: sized, with the warning.
        const QJsonObject quark = formatOf(j, "quark");
        QVERIFY(quark["holds"].toBool());
        QVERIFY(quark["warnings"].toArray()[0].toString().contains("ceil(172/32)"));
        QVERIFY(j["effective_bits"].isDouble());
    }

    void errors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("no model") << QStringList{"--size", "RECIPE"} << 2 << "--size needs --model";
        QTest::newRow("missing recipe")
            << QStringList{"--size", "/nonexistent/r.json", "--model", "MODEL"} << 1
            << "/nonexistent/r.json";
        QTest::newRow("unfit layers")
            << QStringList{"--size", "UNFIT", "--model", "MODEL"} << 1
            << "model.layers.0.mlp.down_proj: weight group size 32 does not divide in_features 172";
        QTest::newRow("unknown format")
            << QStringList{"--size", "RECIPE", "--model", "MODEL", "--format", "tflite"} << 1
            << "unknown export format 'tflite'";
        QTest::newRow("format without sizes")
            << QStringList{"--size", "RECIPE", "--model", "MODEL", "--format", "fake"} << 1
            << "sizes are computed for quark, gguf and onnx";
        QTest::newRow("bad gguf type")
            << QStringList{"--size", "RECIPE", "--model", "MODEL", "--gguf-type", "q2_k"} << 1
            << "gguf_type";
        QTest::newRow("two modes")
            << QStringList{"--size", "RECIPE", "--check", "RECIPE", "--model", "MODEL"} << 2
            << "exactly one of";
    }
    void errors() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QString unfit = writeRecipe("unfit.json", R"({"format": "quantscope-recipe",
            "version": 1, "global": "uint4_wo_32"})");
        args.replaceInStrings("UNFIT", unfit);
        args.replaceInStrings("RECIPE", m_recipe);
        args.replaceInStrings("MODEL", m_model);
        const Run r = cli(QStringList{"recipe"} + args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }
};

QS_TEST_GUILESS_MAIN(TestCliSize)
#include "tst_cli_size.moc"
