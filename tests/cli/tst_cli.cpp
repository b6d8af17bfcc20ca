// quantscope-cli as a user runs it: JSON keys, exit codes and messages for bad input.
#include "TestMain.h"
#include "TestSupport.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QtTest>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

class TestCli : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    static Run cli(const QStringList& args) { return qs::test::runCli(args); }

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

    // All 44 windows of 256: docs/evaluation.md's reference perplexity 5.7471 from an
    // independent plain-PyTorch implementation, to the protocol's 1e-4 relative plus the
    // reference's rounding to 4 decimals (0.00005 / 5.7471 < 1e-5).
    void evalJsonKeys() {
        const Run r =
            cli({"eval", m_model, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--eval-seq-len", "256", "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        for (const char* key :
             {"tokens", "windows", "seq_len", "mean_nll", "perplexity", "tokens_per_second"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j["windows"].toInt(), 44);
        const double ppl = j["perplexity"].toDouble();
        QVERIFY2(std::abs(ppl - 5.7471) / 5.7471 < 1e-4 + 1e-5, qPrintable(QString::number(ppl)));
        // perplexity = exp(mean NLL), both printed from the same double
        QVERIFY(std::abs(std::exp(j["mean_nll"].toDouble()) - ppl) <= 1e-12 * ppl);
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
        // Even where the recipe reads no calibration (weight-only RTN).
        QTest::newRow("missing calibration file")
            << QStringList{"quantize",
                           "MODEL",
                           "--quant-scheme",
                           "int4_wo_32",
                           "--exclude-layers",
                           "*down_proj",
                           "--dataset",
                           "/no/calib.txt",
                           "--out",
                           "/no/such/out"}
            << 1 << "/no/calib.txt: field '--calib-data (--dataset)': file not found";
        // Before the analysis that precedes the study, not after it.
        QTest::newRow("missing sensitivity data")
            << QStringList{"analyze",       "MODEL",        "--quant-scheme",
                           "int8",          "--calib-data", "DATA",
                           "--sensitivity", "--data",       "/no/eval.txt"}
            << 1 << "/no/eval.txt: field '--data': file not found";
        QTest::newRow("bad seq len")
            << QStringList{"eval", "MODEL", "--data", "x", "--eval-seq-len", "abc"} << 2
            << "--eval-seq-len";
        QTest::newRow("bad device")
            << QStringList{"eval", "MODEL", "--data", "DATA", "--device", "tpu"} << 2
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
        // Both exclusion patterns made it into the recorded recipe, with the device and dtype
        // that computed the weights.
        auto recorded = [](const QString& path) {
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()
                                               : QJsonObject();
        };
        const QJsonObject ra = recorded(base + "/a/quantscope_recipe.json");
        QCOMPARE(ra["exclude"].toArray().size(), 2);
        QCOMPARE(ra["provenance"].toObject()["device"].toString(), QString("cpu"));
        QCOMPARE(ra["provenance"].toObject()["dtype"].toString(), QString("float32"));
        // Replayed in another precision, the recorded provenance names that precision (the
        // weights are that run's), its alias resolved.
        const Run c = cli({"quantize", m_model, "--recipe", base + "/a/quantscope_recipe.json",
                           "--dtype", "bf16", "--out", base + "/c"});
        QCOMPARE(c.exitCode, 0);
        const QJsonObject rc = recorded(base + "/c/quantscope_recipe.json");
        QCOMPARE(rc["provenance"].toObject()["dtype"].toString(), QString("bfloat16"));
        QCOMPARE(rc["provenance"].toObject()["created_at"],
                 ra["provenance"].toObject()["created_at"]);
    }

    void quantizedEvalAndUnfitLayers() {
        const QStringList data{"--data",         qs::test::sharedPath("data/tinystories-eval.txt"),
                               "--eval-seq-len", "256",
                               "--max-windows",  "4",
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
                 "--eval-seq-len", "256", "--max-windows", "2", "--json"});
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
                 qs::test::sharedPath("data/tinystories-eval.txt"), "--eval-seq-len", "256",
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
        Run r = cli({"eval", m_model, "--data", eval, "--eval-seq-len", "256", "--max-windows",
                     "100", "--quant-scheme", "int8", "--calib-data", calib, "--num-calib-data",
                     "128", "--exclude-layers", "*dwn_proj", "lm_head", "--json"});
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
        QCOMPARE(r.exitCode, 2); // a bad command line, as the README reserves exit 2 for
        QVERIFY2(r.err.contains("int5_magic") && r.err.contains("int4_wo_128"), r.err.constData());
        // Issue 28: a name a few letters off gets the names it is near, not ~80 names.
        const Run near =
            cli({"eval", m_model, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--quant-scheme", "w_int8_a_int8_per_tensor"});
        QCOMPARE(near.exitCode, 2);
        QVERIFY2(near.err.contains("did you mean 'w_int8_a_int8_per_tensor_sym'"),
                 near.err.constData());
        QVERIFY2(!near.err.contains("int4_wo_128"), near.err.constData());
    }

    // An unknown flag value is a bad command line (exit 2), named with its flag.
    void badFlagValuesExitTwo_data() {
        QTest::addColumn<QStringList>("flags");
        QTest::addColumn<QString>("message");
        QTest::newRow("calib mode")
            << QStringList{"--quant-scheme", "int8", "--calib-mode", "greedy"}
            << "unknown calibration mode 'greedy'";
        QTest::newRow("scheme") << QStringList{"--quant-scheme", "nope"} << "unknown scheme 'nope'";
        QTest::newRow("kv cache") << QStringList{"--quant-scheme", "fp8", "--kv-cache-dtype", "fp4"}
                                  << "fp4";
        QTest::newRow("algorithm") << QStringList{"--quant-scheme", "int8", "--quant_algo", "magic"}
                                   << "unknown algorithm 'magic'";
        QTest::newRow("export format")
            << QStringList{"--quant-scheme", "int8", "--model_export", "tflite"}
            << "unknown export format 'tflite'";
        QTest::newRow("dtype") << QStringList{"--quant-scheme", "int8", "--dtype", "float7"}
                               << "float7";
    }

    void badFlagValuesExitTwo() {
        QFETCH(QStringList, flags);
        QFETCH(QString, message);
        const Run r = cli(
            QStringList{"quantize", m_model, "--out", qs::test::tempDir("cli-badvalue") + "/out"} +
            flags);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err);
    }

    // Quark's quantize_quark.py habits: --model_dir, --output_dir, --model_export hf_format,
    // --dataset, --num_calib_data, --seq_len (the calibration window), --kv_cache_dtype,
    // --exclude_layers; --quant_algo is parsed, and an algorithm Quark has but Quantscope does not
    // (GPTAQ) is refused before any work.
    void quarkFlagsAccepted() {
        const QString out = qs::test::tempDir("cli-quark") + "/out";
        const QString calib = qs::test::sharedPath("data/tinystories-calib.txt");
        const QStringList common{"quantize", "--model_dir",
                                 m_model,    "--output_dir",
                                 out,        "--quant_scheme",
                                 "fp8",      "--dataset",
                                 calib,      "--num_calib_data",
                                 "4",        "--seq_len",
                                 "64",       "--kv_cache_dtype",
                                 "fp8",      "--exclude_layers",
                                 "lm_head",  "-q"};
        Run r =
            cli(common + QStringList{"--model_export", "hf_format", "--quant_algo", "svdquant"});
        QCOMPARE(r.exitCode, 2); // a bad command line
        QVERIFY2(r.err.contains("--quant_algo") && r.err.contains("'svdquant'"), r.err);
        QVERIFY(!QFileInfo::exists(out));
        // Quark's --model_export onnx writes the ONNX graph.
        r = cli(common + QStringList{"--model_export", "onnx"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(QFileInfo::exists(out + "/model.onnx"));
        QVERIFY(QDir(out).removeRecursively());
        r = cli(common + QStringList{"--model_export", "hf_format"});
        QCOMPARE(r.exitCode, 0);
        QFile f(out + "/quantscope_recipe.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject recipe = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonObject c = recipe["calibration"].toObject();
        QCOMPARE(c["seq_len"].toInt(), 64);
        QCOMPARE(c["num_samples"].toInt(), 4);
        QCOMPARE(c["data"].toString(), calib);
        QCOMPARE(recipe["kv_cache"].toString(), QString("fp8"));
        // "-q" after the patterns is the quiet flag, not a third pattern.
        QCOMPARE(recipe["exclude"].toArray().size(), 1);
        QCOMPARE(r.err, QByteArray());
        // The model given both ways is a usage error, not a silent choice.
        r = cli({"inspect", m_model});
        QCOMPARE(r.exitCode, 0);
        r = cli({"eval", m_model, "--model_dir", m_model, "--data", calib});
        QCOMPARE(r.exitCode, 2);
    }

    // Every JSON report says where it came from: model (path, headers hash), recipe hash, data
    // and windows, engine version, device and dtype. The same recipe replayed has the same hash.
    void reportsCarryProvenance() {
        const QString base = qs::test::tempDir("cli-provenance");
        const QString calib = qs::test::sharedPath("data/tinystories-calib.txt");
        const QStringList analyze{
            "analyze", m_model,  "--calib-data",  calib, "--num-calib-data", "4", "--seq-len",
            "64",      "--json", "--no-channels", "-q"};
        const Run a =
            cli(analyze + QStringList{"--quant-scheme", "int8", "--save-recipe", base + "/r.json"});
        QCOMPARE(a.exitCode, 0);
        const QJsonObject pa = QJsonDocument::fromJson(a.out).object()["provenance"].toObject();
        QCOMPARE(pa["model"].toObject()["path"].toString(), m_model);
        QCOMPARE(pa["model"].toObject()["headers_sha256"].toString().size(), 64);
        QCOMPARE(pa["recipe_sha256"].toString().size(), 64);
        QCOMPARE(pa["calibration"].toObject()["data"].toString(), calib);
        QCOMPARE(pa["calibration"].toObject()["windows"].toInt(), 4);
        QCOMPARE(pa["calibration"].toObject()["seq_len"].toInt(), 64);
        QVERIFY(!pa["engine_version"].toString().isEmpty());
        QCOMPARE(pa["device"].toString(), QString("cpu"));
        QCOMPARE(pa["dtype"].toString(), QString("float32"));

        const Run replay = cli(
            {"analyze", m_model, "--recipe", base + "/r.json", "--json", "--no-channels", "-q"});
        QCOMPARE(replay.exitCode, 0);
        const QJsonObject pr =
            QJsonDocument::fromJson(replay.out).object()["provenance"].toObject();
        QCOMPARE(pr["recipe_sha256"], pa["recipe_sha256"]);
        const Run other = cli(analyze + QStringList{"--quant-scheme", "fp8", "--dtype", "bf16"});
        const QJsonObject po = QJsonDocument::fromJson(other.out).object()["provenance"].toObject();
        QVERIFY(po["recipe_sha256"] != pa["recipe_sha256"]);
        // The dtype as the run names it (the outcome's), not as the flag spelled it.
        QCOMPARE(po["dtype"].toString(), QString("bfloat16"));
        QCOMPARE(po["model"], pa["model"]);

        // Another model (same layer names, other headers) has another identity.
        const QString synth = base + "/synth";
        QCOMPARE(cli({"synth", "--arch", "llama", "--out", synth}).exitCode, 0);
        const Run e =
            cli({"eval", synth, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
                 "--max-windows", "1", "--json", "-q"});
        QCOMPARE(e.exitCode, 0);
        const QJsonObject pe = QJsonDocument::fromJson(e.out).object()["provenance"].toObject();
        QVERIFY(pe["model"].toObject()["headers_sha256"] !=
                pa["model"].toObject()["headers_sha256"]);
        QCOMPARE(pe["evaluation"].toObject()["windows"].toInt(), 1);
        QCOMPARE(pe["recipe_sha256"].toString(), QString()); // nothing quantized
    }

    // Engine errors name the recipe field; the CLI adds the flag that sets it.
    void missingCalibrationNamesTheFlag() {
        const Run r = cli({"analyze", m_model, "--quant-scheme", "int8", "-q"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("field 'calibration.data'") &&
                     r.err.contains("(--calib-data FILE)"),
                 r.err);
    }

    // One meaning per flag: --seq-len is the calibration window everywhere (Quark's --seq_len);
    // given to a plain evaluation it would do nothing, so it is refused with the right flag.
    void seqLenMeansCalibrationWindow() {
        const Run r = cli({"eval", m_model, "--data",
                           qs::test::sharedPath("data/tinystories-eval.txt"), "--seq-len", "256"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--eval-seq-len"), r.err);
    }

    // Help names the subcommand (not the binary's path) and lists every accepted scheme name,
    // older Quark names grouped under the scheme they resolve to.
    void helpShowsSubcommandAndEveryScheme() {
        for (const char* command : {"eval", "analyze", "quantize"}) {
            const Run r = cli({command, "--help"});
            QCOMPARE(r.exitCode, 0);
            QVERIFY2(
                r.out.startsWith("Usage: quantscope-cli " + QByteArray(command) + " [options]"),
                r.out.left(200));
            QVERIFY2(r.out.contains("fp8 (w_fp8_a_fp8)"), r.out);
            QVERIFY(r.out.contains("--model_dir") && r.out.contains("--seq_len") &&
                    r.out.contains("--quiet") && r.out.contains("--strict"));
        }
        // Every name the registry accepts appears: the unknown-scheme error lists them all.
        const Run bad = cli({"quantize", m_model, "--out", "/tmp/x", "--quant-scheme", "?"});
        const QByteArray list = bad.err.mid(bad.err.indexOf("valid: ") + 7).split('\n').front();
        const Run help = cli({"quantize", "--help"});
        int names = 0;
        for (const QByteArray& n : list.split(',')) {
            const QByteArray name = n.trimmed();
            QVERIFY2(help.out.contains(" " + name + "\n") || help.out.contains(" " + name + " (") ||
                         help.out.contains("(" + name) || help.out.contains(" " + name + ",") ||
                         help.out.contains(", " + name),
                     name);
            ++names;
        }
        QVERIFY2(names > 70, qPrintable(QString::number(names)));
    }

    // Progress without a terminal: plain lines with percentage, rate (after a second) and ETA,
    // one final line; --quiet silences it.
    void progressPlainLinesAndQuiet() {
        const QStringList args{"eval",           m_model,
                               "--data",         qs::test::sharedPath("data/tinystories-eval.txt"),
                               "--eval-seq-len", "256",
                               "--max-windows",  "4",
                               "--quant-scheme", "int4_wo_per_channel",
                               "--json"};
        Run r = cli(args);
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(!r.err.contains('\r'), r.err);
        QVERIFY2(r.err.contains("eval 100%"), r.err);
        QVERIFY2(r.err.contains("  ETA ") && r.err.contains("block 4: "), r.err);
        // A rate only once a second has passed, so never above 100%/s (issue 28: "963.3%/s").
        const QRegularExpression rate(QStringLiteral("([0-9.]+)%/s"));
        for (auto m = rate.globalMatch(QString::fromUtf8(r.err)); m.hasNext();) {
            const double perSecond = m.next().captured(1).toDouble();
            QVERIFY2(perSecond <= 100.0, r.err);
        }
        QVERIFY2(r.err.count('\n') <= 12, r.err); // a line per tenth at most, and the last
        r = cli(args + QStringList{"--quiet"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.err, QByteArray());
    }

    // On a terminal the line is redrawn in place (util-linux script gives the pseudo-terminal).
    void progressRedrawnOnTerminal() {
        const QString script = QStandardPaths::findExecutable("script");
        if (script.isEmpty())
            QSKIP("no 'script' command to run the CLI on a pseudo-terminal");
        QProcess p;
        const QString cmd = "'" + qs::test::binDir() + "/quantscope-cli' eval '" + m_model +
                            "' --data '" + qs::test::sharedPath("data/tinystories-eval.txt") +
                            "' --eval-seq-len 256 --max-windows 4 --quant-scheme int8 "
                            "--calib-data '" +
                            qs::test::sharedPath("data/tinystories-calib.txt") +
                            "' --num-calib-data 4 --json > /dev/null";
        p.start(script, {"-qfec", cmd, "/dev/null"});
        QVERIFY(p.waitForFinished(600000));
        QCOMPARE(p.exitCode(), 0);
        const QByteArray tty = p.readAllStandardOutput();
        QVERIFY2(tty.contains("\r\033[Keval "), tty);
        QVERIFY2(tty.contains("eval 100%"), tty);
        // Redraws come at most every 200 ms, so how many there are before 100% depends on the
        // machine's speed; each one past 2% carries the rate and an ETA, the last the total time.
        for (const QByteArray& draw : tty.split('\r')) {
            if (!draw.startsWith("\033[Keval "))
                continue;
            const int percent = draw.mid(8, 4).trimmed().chopped(1).toInt();
            if (percent == 100)
                QVERIFY2(draw.contains("  in "), draw);
            else if (percent >= 2)
                QVERIFY2(draw.contains("  ETA "), draw);
        }
    }

    // --strict: a warning is an error, raised before the run writes anything.
    void strictTurnsWarningsIntoErrors() {
        const QString out = qs::test::tempDir("cli-strict") + "/out";
        const Run r = cli({"quantize", m_model, "--quant-scheme", "int4_wo_per_channel",
                           "--exclude-layers", "*dwn_proj", "--out", out, "--strict"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--strict") && r.err.contains("'*dwn_proj' matches no"), r.err);
        QVERIFY(!QFileInfo::exists(out));
    }

    // An output folder that cannot be made names the path and the OS reason.
    void unwritableOutNamesReason() {
        const QString base = qs::test::tempDir("cli-unwritable");
        QFile file(base + "/plain-file");
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        Run r = cli({"quantize", m_model, "--quant-scheme", "int4_wo_per_channel", "--out",
                     base + "/plain-file/sub/out", "-q"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("plain-file/sub") && r.err.contains("Not a directory"), r.err);
        // An OS refusal other than "Not a directory", which the CLI must pass on with the path:
        // a folder in sysfs, where mkdir is refused to every user, root included (EPERM, or EROFS
        // where /sys is mounted read-only); the expected reason is what the OS answers this
        // process for the same mkdir.
        const QByteArray sysOut = "/sys/quantscope-test-out";
        QVERIFY2(::mkdir(sysOut.constData(), 0700) != 0, "this system lets mkdir in /sys succeed");
        const QByteArray reason = std::strerror(errno);
        r = cli({"quantize", m_model, "--quant-scheme", "int4_wo_per_channel", "--out",
                 QString::fromUtf8(sysOut), "-q"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("/sys/.quantscope-test-out.partial-") && r.err.contains(reason),
                 r.err + " (expected: " + reason + ")");
        // A folder without write permission, for a user whom permissions stop (not root: the
        // sysfs case above is the one that runs under CI's root).
        if (::geteuid() != 0) {
            QVERIFY(QFile::setPermissions(base, QFileDevice::ReadOwner | QFileDevice::ExeOwner));
            r = cli({"quantize", m_model, "--quant-scheme", "int4_wo_per_channel", "--out",
                     base + "/out", "-q"});
            QFile::setPermissions(base, QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                            QFileDevice::ExeOwner);
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(r.err.contains(base.toUtf8()) && r.err.contains("Permission denied"), r.err);
        }
    }

    // A killed run leaves ".NAME.partial-PID-ID"; the next run into the same output removes it
    // once its process is gone, and leaves a live one alone.
    void stalePartialFoldersRemoved() {
        const QString base = qs::test::tempDir("cli-partial");
        const QString dead = base + "/.out.partial-2147480000-deadbeef";
        const QString live =
            base + "/.out.partial-" + QString::number(QCoreApplication::applicationPid()) + "-1";
        QVERIFY(QDir().mkpath(dead) && QDir().mkpath(live));
        const Run r = cli({"quantize", m_model, "--quant-scheme", "int4_wo_per_channel", "--out",
                           base + "/out", "-q"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(!QFileInfo::exists(dead));
        QVERIFY(QFileInfo::exists(live));
        QVERIFY(QFileInfo::exists(base + "/out/model.safetensors"));
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

QS_TEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
