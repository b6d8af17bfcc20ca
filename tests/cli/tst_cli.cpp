// quantscope-cli as a user runs it: JSON keys, exit codes and messages for bad input.
#include "TestSupport.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

class TestCli : public QObject {
    Q_OBJECT

private:
    struct Run {
        int exitCode;
        QByteArray out;
        QByteArray err;
    };

    static Run cli(const QStringList& args) {
        QProcess p;
        p.start(qs::test::binDir() + "/quantscope-cli", args);
        if (!p.waitForFinished(600000))
            qFatal("quantscope-cli timed out");
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                p.readAllStandardOutput(), p.readAllStandardError()};
    }

    QString m_model;

private Q_SLOTS:
    void initTestCase() { m_model = qs::test::sharedPath("models/stories260K"); }

    // A CUDA LibTorch build keeps libtorch_cuda a needed library of the CLI (linkers drop it
    // with --as-needed, and CUDA then silently disappears); a CPU build has none.
    void cudaLibraryLinkedIffBuiltWithCuda() {
        QProcess p;
        p.start("readelf", {"-d", qs::test::binDir() + "/quantscope-cli"});
        if (!p.waitForFinished(60000) || p.exitCode() != 0)
            QSKIP("readelf (binutils) is not available");
        const bool linked = p.readAllStandardOutput().contains("libtorch_cuda");
#ifdef QS_TORCH_CUDA
        QVERIFY2(linked, "built against a CUDA LibTorch but libtorch_cuda is not needed");
#else
        QVERIFY(!linked);
#endif
        const Run r = cli({"--version"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("CUDA "));
    }

    void inspectJson() {
        const Run r = cli({"inspect", m_model, "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["family"].toString(), QString("llama"));
        QCOMPARE(j["total_parameters"].toInteger(), 260032); // embedding counted once (tied)
        QCOMPARE(j["config"].toObject()["num_key_value_heads"].toString(), QString("4"));
    }

    void evalJsonKeys() {
        const Run r =
            cli({"eval", m_model, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--seq-len", "256", "--max-windows", "4", "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        for (const char* key :
             {"tokens", "windows", "seq_len", "mean_nll", "perplexity", "tokens_per_second"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j["windows"].toInt(), 4);
        QVERIFY(j["perplexity"].toDouble() > 1.0 && j["perplexity"].toDouble() < 20.0);
    }

    void generateText() {
        const Run r =
            cli({"generate", m_model, "--prompt", "Once upon a time", "--max-new-tokens", "12"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("Once upon a time, there was a little girl named Lily"), r.out);
    }

    void synthThenInspect() {
        const QString out = qs::test::tempDir("cli-synth") + "/m";
        const Run s = cli({"synth", "--arch", "opt", "--out", out, "--layers", "2", "--hidden",
                           "64", "--heads", "4", "--intermediate", "128", "--seed", "3"});
        QCOMPARE(s.exitCode, 0);
        const Run r = cli({"inspect", out, "--json"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["family"].toString(), QString("opt"));
    }

    void badInputs_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("no command") << QStringList{} << 2 << "Usage";
        QTest::newRow("unknown command")
            << QStringList{"frobnicate"} << 2 << "unknown command 'frobnicate'";
        QTest::newRow("missing folder")
            << QStringList{"inspect", "/no/such/model"} << 1 << "/no/such/model: not a folder";
        QTest::newRow("folder without config")
            << QStringList{"inspect", QDir::tempPath()} << 1 << "config.json: file not found";
        QTest::newRow("eval without data")
            << QStringList{"eval", "MODEL"} << 2 << "--data TEXT is required";
        QTest::newRow("missing data file") << QStringList{"eval", "MODEL", "--data", "/no/such.txt"}
                                           << 1 << "/no/such.txt: file not found";
        QTest::newRow("bad seq len")
            << QStringList{"eval", "MODEL", "--data", "x", "--seq-len", "abc"} << 2 << "--seq-len";
        QTest::newRow("bad device")
            << QStringList{"eval", "MODEL", "--data", "DATA", "--device", "tpu"} << 1
            << "unknown device 'tpu'";
        QTest::newRow("unknown option") << QStringList{"inspect", "MODEL", "--frob"} << 2 << "frob";
        QTest::newRow("synth bad arch")
            << QStringList{"synth", "--arch", "gpt", "--out", "/tmp/x"} << 2 << "--arch";
    }

    void badInputs() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        args.replaceInStrings("MODEL", m_model);
        args.replaceInStrings("DATA", qs::test::sharedPath("data/tinystories-eval.txt"));
        const Run r = cli(args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
    }

    void analyzeJsonKeyedByLayer() {
        const Run r = cli({"analyze", m_model, "--quant-scheme", "int8", "--calib-data",
                           qs::test::sharedPath("data/tinystories-calib.txt"), "--num-calib-data",
                           "4", "--seq-len", "64", "--json", "--no-channels"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonObject layers = j["layers"].toObject();
        QCOMPARE(layers.size(), 5 * 7);
        const QJsonObject q = layers["model.layers.0.self_attn.q_proj"].toObject();
        QVERIFY(q["weight_error"].toObject()["sqnr_db"].toDouble() > 30.0);
        QVERIFY(q["output_error_accumulated"].toObject()["cosine"].toDouble() > 0.99);
        QCOMPARE(j["outlier_ranking"].toArray().size(), 35);
    }

    void quantizeReplayIsIdentical() {
        const QString base = qs::test::tempDir("cli-quantize");
        const Run a = cli({"quantize", m_model, "--quant-scheme", "int4_wo_32", "--exclude-layers",
                           "*down_proj", "*layers.4.*", "--out", base + "/a"});
        QCOMPARE(a.exitCode, 0);
        const Run b = cli({"quantize", m_model, "--recipe", base + "/a/quantscope_recipe.json",
                           "--out", base + "/b"});
        QCOMPARE(b.exitCode, 0);
        QFile fa(base + "/a/model.safetensors"), fb(base + "/b/model.safetensors");
        QVERIFY(fa.open(QIODevice::ReadOnly) && fb.open(QIODevice::ReadOnly));
        QCOMPARE(fa.readAll(), fb.readAll());
        // Both exclusion patterns made it into the recorded recipe.
        QFile recipe(base + "/a/quantscope_recipe.json");
        QVERIFY(recipe.open(QIODevice::ReadOnly));
        const QJsonArray exclude =
            QJsonDocument::fromJson(recipe.readAll()).object()["exclude"].toArray();
        QCOMPARE(exclude.size(), 2);
    }

    void quantizedEvalAndUnfitLayers() {
        const QStringList data{"--data",        qs::test::sharedPath("data/tinystories-eval.txt"),
                               "--seq-len",     "256",
                               "--max-windows", "4",
                               "--json"};
        const Run unfit = cli(QStringList{"eval", m_model, "--quant-scheme", "int4_wo_32"} + data);
        QCOMPARE(unfit.exitCode, 1);
        QVERIFY2(unfit.err.contains("model.layers.0.mlp.down_proj") &&
                     unfit.err.contains("does not divide in_features 172"),
                 unfit.err.constData());
        const Run fp = cli(QStringList{"eval", m_model} + data);
        const Run q = cli(QStringList{"eval", m_model, "--quant-scheme", "int4_wo_32",
                                      "--exclude-layers", "*down_proj"} +
                          data);
        QCOMPARE(q.exitCode, 0);
        const double pFp = QJsonDocument::fromJson(fp.out).object()["perplexity"].toDouble();
        const double pQ = QJsonDocument::fromJson(q.out).object()["perplexity"].toDouble();
        QVERIFY2(pQ > pFp * 1.01 && pQ < pFp * 1.5,
                 qPrintable(QString("%1 vs %2").arg(pQ).arg(pFp)));
    }

    // A report that cannot be written in full is a failure (here: stdout on a full device).
    void fullStdoutFails() {
        if (!QFileInfo::exists(QStringLiteral("/dev/full")))
            QSKIP("this platform has no /dev/full");
        QProcess p;
        p.setStandardOutputFile(QStringLiteral("/dev/full"));
        p.start(qs::test::binDir() + "/quantscope-cli",
                {"eval", m_model, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--seq-len", "256", "--max-windows", "2", "--json"});
        QVERIFY(p.waitForFinished(600000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(p.readAllStandardError().contains("No space left on device"), "no OS reason");
    }

    // A recipe that cannot be written in full fails and leaves nothing under its name. The full
    // disk is simulated with a file-size limit of 0 blocks (writes fail with EFBIG).
    void unwritableRecipeFailsAndLeavesNothing() {
        const QString out = qs::test::tempDir("cli-full") + "/recipe.json";
        QProcess p;
        p.start(QStringLiteral("/bin/bash"),
                {"-c", "ulimit -f 0; trap '' XFSZ; exec \"$0\" \"$@\"",
                 qs::test::binDir() + "/quantscope-cli", "recipe", "--help"});
        QVERIFY(p.waitForFinished(60000));
        if (p.exitCode() != 0)
            QSKIP("cannot run the CLI under a file-size limit here");
        p.start(QStringLiteral("/bin/bash"),
                {"-c", "ulimit -f 0; trap '' XFSZ; exec \"$0\" \"$@\"",
                 qs::test::binDir() + "/quantscope-cli", "eval", m_model, "--data",
                 qs::test::sharedPath("data/tinystories-eval.txt"), "--seq-len", "256",
                 "--max-windows", "1", "--quant-scheme", "int4_wo_32", "--exclude-layers",
                 "*down_proj", "--save-recipe", out});
        QVERIFY(p.waitForFinished(600000));
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains("recipe.json") && err.contains("write failed"), err);
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(QDir(QFileInfo(out).path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }

    // Nothing silent: patterns without a layer and fewer windows than asked are warnings;
    // --save-recipe with nothing to record is a command-line error.
    void silentNoOpsAreReported() {
        const QString eval = qs::test::sharedPath("data/tinystories-eval.txt");
        const QString calib = qs::test::sharedPath("data/tinystories-calib.txt");
        Run r = cli({"eval", m_model, "--data", eval, "--seq-len", "256", "--max-windows", "100",
                     "--quant-scheme", "int8", "--calib-data", calib, "--num-calib-data", "128",
                     "--exclude-layers", "*dwn_proj", "lm_head", "--json"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains("warning: exclude[0] '*dwn_proj' matches no quantizable layer"),
                 r.err);
        QVERIFY2(!r.err.contains("exclude[1]"), r.err); // lm_head: full precision anyway
        QVERIFY2(r.err.contains("holds 7 windows of 512 tokens, fewer than the 128 asked"), r.err);
        QVERIFY2(r.err.contains("holds 44 windows of 256 tokens, fewer than the 100 asked"), r.err);
        r = cli({"eval", m_model, "--data", eval, "--save-recipe",
                 qs::test::tempDir("cli-save") + "/r.json"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("nothing to record"), r.err);
    }

    void unknownSchemeListsValidNames() {
        const Run r =
            cli({"eval", m_model, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--quant-scheme", "int5_magic"});
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("int5_magic") && r.err.contains("int4_wo_128"), r.err.constData());
    }

    void corruptSafetensorsNamedInError() {
        const QString dir = qs::test::tempDir("corrupt");
        QFile::copy(m_model + "/config.json", dir + "/config.json");
        QFile f(dir + "/model.safetensors");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10)); // header length beyond file
        f.close();
        const Run r = cli({"inspect", dir});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("model.safetensors"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
