// quantscope-cli eval, quantize and analyze spread over ranks (--nproc: torchrun's variables,
// c10d's TCPStore and Gloo over loopback): the same figures (perplexity, fidelity report),
// double for double, the same files, byte for byte, at 1, 2 and 4 ranks as in one process, and
// the same per-layer analysis and sensitivity rows at 1 and 2 ranks; a rank that dies or hangs
// mid-run stops the others with an error and nothing written; and the launches that must fail,
// failing in plain words.
#include "LoopbackPort.h"
#include "RankProcesses.h"
#include "TestMain.h"
#include "TestSupport.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <signal.h>

class TestCliDistributed : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    QString m_model;

    // 20 windows of 256 tokens: scoring batches of 8 windows (2048 tokens on the CPU), so three
    // shards of 8, 8 and 4 windows; at 4 ranks the last rank has none.
    QStringList evalArgs() const {
        return {"eval",           m_model,
                "--data",         qs::test::sharedPath("data/tinystories-eval.txt"),
                "--eval-seq-len", "256",
                "--max-windows",  "20",
                "--threads",      "1",
                "--json",         "--quiet"};
    }
    QStringList int8Args() const {
        return evalArgs() << "--quant-scheme"
                          << "int8"
                          << "--calib-data" << qs::test::sharedPath("data/tinystories-calib.txt")
                          << "--num-calib-data"
                          << "4"
                          << "--seq-len"
                          << "64";
    }
    // 100 calibration windows of 64 tokens: batches of 32 windows (2048 tokens on the CPU), so
    // four shards of 32, 32, 32 and 4 windows; at 2 ranks two each, at 4 ranks one each.
    QStringList quantizeArgs(const QString& out) const {
        return {"quantize",
                m_model,
                "--calib-data",
                qs::test::sharedPath("data/tinystories-eval.txt"),
                "--num-calib-data",
                "100",
                "--seq-len",
                "64",
                "--threads",
                "1",
                "--out",
                out};
    }
    static QJsonObject json(const Run& r) { return QJsonDocument::fromJson(r.out).object(); }
    // 200 calibration windows of 48 tokens: batches of 42 windows (2016 tokens on the CPU), so
    // five shards (four of 42 windows, one of 32): three on rank 0, two on rank 1, and the
    // per-channel samples (the first 8192 tokens) end inside shard 4. int8 static activations
    // per tensor (input quantizer errors, quantized histograms) on int8 per-channel weights with
    // GPTQ (round-to-nearest baselines).
    QStringList analyzeArgs() const {
        return {"analyze",          m_model,
                "--quant-scheme",   "w_int8_per_channel_a_int8_per_tensor_sym",
                "--quant-algo",     "gptq",
                "--calib-data",     qs::test::sharedPath("data/tinystories-eval.txt"),
                "--num-calib-data", "200",
                "--seq-len",        "48",
                "--threads",        "1",
                "--json",           "--quiet"};
    }
    // Where two outputs part: the first line that differs, with its number.
    static QString firstDifference(const QByteArray& a, const QByteArray& b) {
        const QList<QByteArray> la = a.split('\n'), lb = b.split('\n');
        for (int i = 0; i < std::max(la.size(), lb.size()); ++i)
            if (la.value(i) != lb.value(i))
                return QString("line %1: %2 against %3")
                    .arg(i + 1)
                    .arg(QString(la.value(i).trimmed()), QString(lb.value(i).trimmed()));
        return "no difference";
    }
    // A pretty-printed report without the lines that say when it was made and how long it took
    // (the report's "seconds", the provenance's "created_at"): the bytes two runs can share.
    static QByteArray withoutTimes(const QByteArray& out) {
        QList<QByteArray> kept;
        for (const QByteArray& line : out.split('\n'))
            if (!line.trimmed().startsWith("\"seconds\":") &&
                !line.trimmed().startsWith("\"created_at\":"))
                kept.push_back(line);
        return kept.join('\n');
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        qputenv("QS_CACHE_DIR", "off");
    }

    void sameFiguresAtEveryWorldSize_data() {
        QTest::addColumn<bool>("quantized");
        QTest::newRow("fp32") << false;
        QTest::newRow("int8 static") << true;
    }
    void sameFiguresAtEveryWorldSize() {
        QFETCH(bool, quantized);
        const QStringList args = quantized ? int8Args() : evalArgs();
        const Run one = qs::test::runCli(args);
        QVERIFY2(one.exitCode == 0, one.err.constData());
        const QJsonObject base = json(one);
        QCOMPARE(base["windows"].toInt(), 20);
        for (const QString ranks : {"2", "4"}) {
            const Run many = qs::test::runCli(QStringList(args) << "--nproc" << ranks);
            QVERIFY2(many.exitCode == 0, many.err.constData());
            const QJsonObject j = json(many);
            // Exact: each shard is one of the single process's scoring batches, summed in the
            // same order (WindowShards.h). A rank that scored its windows twice, or none, or
            // out of order, moves the sum.
            QVERIFY2(
                j["mean_nll"].toDouble() == base["mean_nll"].toDouble(),
                qPrintable(ranks + " ranks: " + QString::number(j["mean_nll"].toDouble(), 'g', 17) +
                           " against " + QString::number(base["mean_nll"].toDouble(), 'g', 17)));
            QVERIFY(j["perplexity"].toDouble() == base["perplexity"].toDouble());
            QCOMPARE(j["windows"].toInt(), 20);
            QCOMPARE(j["tokens"].toInt(), base["tokens"].toInt());
            // Rank 0 speaks, for a group that really joined over Gloo.
            const QJsonObject group = j["distributed"].toObject();
            QCOMPARE(group["world_size"].toInt(), ranks.toInt());
            QCOMPARE(group["rank"].toInt(), 0);
            QCOMPARE(group["backend"].toString(), QString("gloo"));
            // The fidelity report of the quantized model: every position's samples gathered in
            // window order, so the percentiles and the bootstrap are one process's, double for
            // double (a shard's samples left out or misplaced move them).
            if (quantized) {
                QCOMPARE(j["fidelity"].toObject()["positions"].toInt(), 20 * 255);
                QCOMPARE(QJsonDocument(j["fidelity"].toObject()).toJson(),
                         QJsonDocument(base["fidelity"].toObject()).toJson());
            }
        }
        QVERIFY(base["distributed"].isNull()); // one process joins nothing
    }

    void sameFilesAtEveryWorldSize_data() {
        QTest::addColumn<QStringList>("scheme");
        // Group 4 divides every layer's input width (64 and 172).
        QTest::newRow("uint4 per group, GPTQ")
            << QStringList{"--quant-scheme", "w_uint4_per_group_asym",
                           "--group-size",   "4",
                           "--quant-algo",   "gptq"};
        QTest::newRow("int8 static") << QStringList{"--quant-scheme", "int8"};
    }
    void sameFilesAtEveryWorldSize() {
        QFETCH(QStringList, scheme);
        const QString base = qs::test::tempDir("quantize-1");
        const Run one = qs::test::runCli(quantizeArgs(base) << scheme << "--quiet");
        QVERIFY2(one.exitCode == 0, one.err.constData());
        const QMap<QString, QByteArray> expected = qs::test::filesForComparison(base);
        QVERIFY(expected.contains("config.json"));
        QVERIFY(expected.size() >= 3); // config, weights, recipe
        for (const QString ranks : {"2", "4"}) {
            const QString out = qs::test::tempDir("quantize-" + ranks);
            const Run many = qs::test::runCli(quantizeArgs(out) << scheme << "--quiet"
                                                                << "--nproc" << ranks);
            QVERIFY2(many.exitCode == 0, many.err.constData());
            // The windows were split (every rank calibrating on all would give the same bytes
            // too, at one process's speed, and says so).
            QVERIFY2(!many.err.contains("every rank calibrated on all"), many.err.constData());
            // Byte for byte: each rank calibrates on whole batches of the single process, GPTQ
            // adds the batches' Hessian parts in shard order as one process does, and min/max
            // merge exactly (calib/CalibrationShards.h). A shard calibrated twice or not at
            // all, or added out of order, changes the scales or the codes.
            const QMap<QString, QByteArray> got = qs::test::filesForComparison(out);
            QCOMPARE(got.keys(), expected.keys());
            for (const QString& name : expected.keys())
                QVERIFY2(got[name] == expected[name],
                         qPrintable(ranks + " ranks: " + name + " differs from one process's"));
        }
    }

    void saysWhyEveryRankCalibratesOnAll() {
        // 4 windows of 64 tokens are one calibration batch: two ranks cannot split it.
        const QString out = qs::test::tempDir("quantize-unsplit");
        QStringList args = quantizeArgs(out) << "--quant-scheme"
                                             << "int8"
                                             << "--quiet"
                                             << "--nproc"
                                             << "2";
        args[args.indexOf("--num-calib-data") + 1] = "4";
        const Run r = qs::test::runCli(args);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("warning: every rank calibrated on all 4 windows") &&
                     r.err.contains("1 calibration batch for 2 ranks"),
                 r.err.constData());
        QCOMPARE(r.err.count("every rank calibrated"), 1); // rank 0 alone speaks
    }

    // Two ranks started by hand (torchrun's variables); rank 1 is killed or stopped once rank 0
    // reports progress, i.e. before rank 0 can have passed the collectives of its later blocks.
    void aRankLostMidRunStopsTheOthers_data() {
        QTest::addColumn<int>("signal");
        QTest::newRow("killed") << int(SIGKILL);
        QTest::newRow("hung") << int(SIGSTOP);
    }
    void aRankLostMidRunStopsTheOthers() {
        QFETCH(int, signal);
        const int port = qs::test::freeLoopbackPort();
        QVERIFY(port > 0);
        const QString out = qs::test::tempDir("quantize-lost");
        QDir(out).removeRecursively();
        // A hang is noticed when the collective's timeout (--dist-timeout) runs out.
        const QStringList args = quantizeArgs(out) << "--quant-scheme"
                                                   << "w_uint4_per_group_asym"
                                                   << "--group-size"
                                                   << "4"
                                                   << "--quant-algo"
                                                   << "gptq"
                                                   << "--dist-timeout"
                                                   << "5";
        QProcess ranks[2];
        QVERIFY(qs::test::startRanks(ranks, 2, port, args));
        // Rank 0 prints a progress line each tenth (stderr is not a terminal here).
        QByteArray err0;
        while (!err0.contains("quantize") && ranks[0].state() == QProcess::Running) {
            ranks[0].waitForReadyRead(100);
            err0 += ranks[0].readAllStandardError();
        }
        ::kill(pid_t(ranks[1].processId()), signal);
        QVERIFY(ranks[0].waitForFinished(120000));
        err0 += ranks[0].readAllStandardError();
        ::kill(pid_t(ranks[1].processId()), SIGKILL);
        ranks[1].waitForFinished(10000);
        QCOMPARE(ranks[0].exitCode(), 1);
        QVERIFY2(err0.contains("rank 0 of 2 lost the other ranks"), err0.constData());
        // Nothing promoted: no checkpoint where --out points.
        QVERIFY2(!QFile::exists(out + "/config.json"), qPrintable(out));
        QVERIFY(!QFile::exists(out + "/model.safetensors"));
    }

    void sameAnalysisAtEveryWorldSize() {
        const Run one = qs::test::runCli(analyzeArgs());
        QVERIFY2(one.exitCode == 0, one.err.constData());
        const QByteArray base = withoutTimes(one.out);
        QVERIFY(base.contains("\"input_quantization_error\""));
        const Run two = qs::test::runCli(analyzeArgs() << "--nproc"
                                                       << "2");
        QVERIFY2(two.exitCode == 0, two.err.constData());
        // Byte for byte: every rank's statistics of each shard merged in shard order are the
        // single process's sums, extremes and samples (calib/LayerAnalyzer.h). A shard left out,
        // taken twice or merged out of order changes the errors' sums and the histograms.
        QVERIFY(!two.err.contains("every rank calibrated on all")); // the calibration was split
        QVERIFY2(withoutTimes(two.out) == base,
                 qPrintable(firstDifference(withoutTimes(two.out), base)));
    }

    void sameSensitivityRowsAtEveryWorldSize() {
        // A weight-only recipe on few windows: the rows (35 linears, two evaluations each) are
        // the work; the ranks measure about half each and rank 0 reports them all.
        const QStringList args = {"analyze",
                                  m_model,
                                  "--quant-scheme",
                                  "w_uint4_per_group_asym",
                                  "--group-size",
                                  "4",
                                  "--calib-data",
                                  qs::test::sharedPath("data/tinystories-calib.txt"),
                                  "--num-calib-data",
                                  "8",
                                  "--seq-len",
                                  "64",
                                  "--sensitivity",
                                  "--data",
                                  qs::test::sharedPath("data/tinystories-eval.txt"),
                                  "--max-windows",
                                  "2",
                                  "--eval-seq-len",
                                  "128",
                                  "--threads",
                                  "1",
                                  "--json",
                                  "--quiet"};
        const Run one = qs::test::runCli(args);
        QVERIFY2(one.exitCode == 0, one.err.constData());
        const QJsonArray rows = json(one)["sensitivity"].toObject()["layers"].toArray();
        QCOMPARE(rows.size(), 35);
        const Run two = qs::test::runCli(QStringList(args) << "--nproc"
                                                           << "2");
        QVERIFY2(two.exitCode == 0, two.err.constData());
        // Byte for byte, the rows in the single process's order: each measured by one rank
        // from the same plans and reference inputs, gathered as doubles.
        QVERIFY2(withoutTimes(two.out) == withoutTimes(one.out),
                 qPrintable(firstDifference(withoutTimes(two.out), withoutTimes(one.out))));
    }

    void commandsThatDoNotSplitAreRefused() {
        const Run r = qs::test::runCli({"recipe", m_model, "--nproc", "2"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("does not split its work across ranks"), r.err.constData());
    }

    void badEnvironmentNamesTheVariable() {
        qputenv("WORLD_SIZE", "2");
        qputenv("RANK", "2");
        qputenv("MASTER_ADDR", "127.0.0.1");
        const Run r = qs::test::runCli(evalArgs());
        qunsetenv("WORLD_SIZE");
        qunsetenv("RANK");
        qunsetenv("MASTER_ADDR");
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("RANK") && r.err.contains("outside a world of 2"),
                 r.err.constData());
    }

    void aRankThatNeverComesTimesOut() {
        // Rank 0 of 2 alone: the store waits for the second rank, then gives up naming the
        // master address and the rank.
        const int port = qs::test::freeLoopbackPort();
        QVERIFY(port > 0);
        qputenv("WORLD_SIZE", "2");
        qputenv("RANK", "0");
        qputenv("MASTER_ADDR", "127.0.0.1");
        qputenv("MASTER_PORT", QByteArray::number(port));
        const Run r = qs::test::runCli(evalArgs() << "--dist-timeout"
                                                  << "2");
        qunsetenv("WORLD_SIZE");
        qunsetenv("RANK");
        qunsetenv("MASTER_ADDR");
        qunsetenv("MASTER_PORT");
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("127.0.0.1:" + QByteArray::number(port)) &&
                     r.err.contains("could not join"),
                 r.err.constData());
    }
};

QS_TEST_GUILESS_MAIN(TestCliDistributed)
#include "tst_cli_distributed.moc"
