// quantscope-cli quantize --resume: a run killed (SIGKILL) after some blocks finished continues
// from its saved state and writes the same bytes as an uninterrupted run; state of another run
// (another recipe, another world size) is refused naming what differs, with nothing written; a
// distributed run that lost a rank resumes over the same ranks to one process's bytes.
#include "LoopbackPort.h"
#include "RankProcesses.h"
#include "TestMain.h"
#include "TestSupport.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <signal.h>

class TestCliResume : public QObject {
    Q_OBJECT

private:
    using Run = qs::test::CliRun;
    static constexpr int kBlocks = 5; // stories260K's decoder blocks
    QString m_model;

    // 256 windows of 256 tokens: enough work per block that the kill, sent as soon as the
    // first block's state appears, lands long before the last block. Two formats: Quark's
    // holds the codes, weight scales and static input scales as computed, the fake checkpoint
    // the dequantized weights the block holds.
    QStringList quantizeArgs(const QString& out, const QStringList& scheme) const {
        return QStringList{"quantize",
                           m_model,
                           "--calib-data",
                           qs::test::sharedPath("data/calib-general.txt"),
                           "--num-calib-data",
                           "256",
                           "--seq-len",
                           "256",
                           "--threads",
                           "1",
                           "--format",
                           "quark,fake",
                           "--out",
                           out}
               << scheme;
    }
    // Whether an export was committed under `out` (each format writes its own subfolder, staged
    // beside it until its commit).
    static bool promoted(const QString& out) {
        for (const QString format : {"quark", "fake"})
            if (QFileInfo::exists(out + "/" + format + "/model.safetensors") ||
                QFileInfo::exists(out + "/" + format + "/config.json"))
                return true;
        return false;
    }
    static QString statePath(const QString& out) { return out + ".resume/rank-0/state.json"; }
    static QJsonObject readJson(const QString& path) {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            return {};
        return QJsonDocument::fromJson(f.readAll()).object();
    }

    // Starts `args` with --resume and kills it (SIGKILL) as soon as its state says a block is
    // finished; returns the state the killed run left. Fails the test when the run ended first.
    QJsonObject killAfterFirstBlock(const QStringList& args) {
        const QString state = statePath(args[args.indexOf("--out") + 1]);
        QProcess run;
        run.start(qs::test::binDir() + "/quantscope-cli", QStringList(args) << "--resume"
                                                                            << "--quiet");
        if (!run.waitForStarted())
            return {};
        // state.json appears (by rename) only once block 0's state is complete.
        while (!QFile::exists(state) && run.state() == QProcess::Running)
            run.waitForFinished(5);
        ::kill(pid_t(run.processId()), SIGKILL);
        run.waitForFinished(-1);
        if (run.exitStatus() != QProcess::CrashExit) {
            qWarning("the run ended before it was killed: %s",
                     run.readAllStandardError().constData());
            return {};
        }
        return readJson(state);
    }

private Q_SLOTS:
    void initTestCase() {
        m_model = qs::test::sharedPath("models/stories260K");
        qputenv("QS_CACHE_DIR", "off");
    }

    void killedRunResumesToTheSameBytes_data() {
        QTest::addColumn<QStringList>("scheme");
        // Group 4 divides every layer's input width (64 and 172). GPTQ carries the quantized
        // stream beside the reference one; int8's static input scales are observed per block.
        QTest::newRow("uint4 per group, GPTQ") << QStringList{
            "--quant-scheme", "w_uint4_per_group_asym", "--group-size", "4", "--quant-algo", "gptq",
            // Quark's layout holds 172 packed rows; its loaders do not.
            "--allow-unloadable"};
        QTest::newRow("int8 static activations") << QStringList{"--quant-scheme", "int8"};
    }
    void killedRunResumesToTheSameBytes() {
        QFETCH(QStringList, scheme);
        const QString base = qs::test::tempDir("resume-base");
        const Run whole = qs::test::runCli(quantizeArgs(base, scheme) << "--quiet");
        QVERIFY2(whole.exitCode == 0, whole.err.constData());
        const QMap<QString, QByteArray> expected = qs::test::filesForComparison(base);
        QVERIFY(expected.contains("quark/model.safetensors"));
        QVERIFY(expected.contains("fake/model.safetensors"));
        QVERIFY(!QFileInfo::exists(base + ".resume")); // no state without --resume

        const QString out = qs::test::tempDir("resume-out");
        QDir(out).removeRecursively(); // the export must not exist before it is committed
        const QJsonObject killed = killAfterFirstBlock(quantizeArgs(out, scheme));
        const int finished = killed["finished_blocks"].toInt();
        QVERIFY2(finished >= 1 && finished < kBlocks, qPrintable(QString::number(finished)));
        QVERIFY(!promoted(out)); // nothing promoted by the killed run

        const Run resumed = qs::test::runCli(quantizeArgs(out, scheme) << "--resume"
                                                                       << "--json");
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        // The finished blocks were restored, not computed again: their times are the killed
        // run's, to the bit, and the others are this run's own.
        const QJsonArray seconds =
            QJsonDocument::fromJson(resumed.out).object()["block_seconds"].toArray();
        QCOMPARE(seconds.size(), kBlocks);
        const QJsonArray saved = killed["block_seconds"].toArray();
        for (int b = 0; b < finished; ++b)
            QVERIFY(seconds[b].toDouble() == saved[b].toDouble());
        // Byte for byte: the restored blocks replay their codes, scales and frozen activation
        // scales into the exporter, and the later blocks start from the saved streams. A stream,
        // a plan or a scale restored wrong changes the codes or the scales written.
        const QMap<QString, QByteArray> got = qs::test::filesForComparison(out);
        QCOMPARE(got.keys(), expected.keys());
        for (const QString& name : expected.keys())
            QVERIFY2(got[name] == expected[name],
                     qPrintable(name + " differs from the uninterrupted run's"));
        QVERIFY(!QFileInfo::exists(out + ".resume")); // a committed run leaves no state
    }

    // quantize --evaluation_dataset carries the evaluation windows through the blocks as a
    // third stream: restored, the perplexity is the same double.
    void evaluationAfterAResumeIsTheSame() {
        const QStringList int8{"--quant-scheme", "int8", "--evaluation_dataset",
                               qs::test::sharedPath("data/tinystories-eval.txt")};
        const Run whole =
            qs::test::runCli(quantizeArgs(qs::test::tempDir("resume-eval-base"), int8) << "--json");
        QVERIFY2(whole.exitCode == 0, whole.err.constData());
        const QString out = qs::test::tempDir("resume-eval");
        QDir(out).removeRecursively();
        const QJsonObject killed = killAfterFirstBlock(quantizeArgs(out, int8));
        QVERIFY(killed["finished_blocks"].toInt() >= 1);
        const Run resumed = qs::test::runCli(quantizeArgs(out, int8) << "--resume"
                                                                     << "--json");
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        const double expected = QJsonDocument::fromJson(whole.out)
                                    .object()["perplexity"]
                                    .toObject()["mean_nll"]
                                    .toDouble();
        const double got = QJsonDocument::fromJson(resumed.out)
                               .object()["perplexity"]
                               .toObject()["mean_nll"]
                               .toDouble();
        QVERIFY(expected > 0);
        QVERIFY2(got == expected, qPrintable(QString::number(got, 'g', 17) + " against " +
                                             QString::number(expected, 'g', 17)));
    }

    void stateOfAnotherRunIsRefused() {
        const QStringList gptq{
            "--quant-scheme", "w_uint4_per_group_asym", "--group-size", "4", "--quant-algo",
            "gptq",           "--allow-unloadable"};
        const QString out = qs::test::tempDir("resume-refused");
        QDir(out).removeRecursively();
        const QJsonObject killed = killAfterFirstBlock(quantizeArgs(out, gptq));
        QVERIFY(killed["finished_blocks"].toInt() >= 1);

        // Another group size: the recipe field that differs is named, with both values.
        QStringList other = quantizeArgs(out, gptq) << "--resume";
        other[other.indexOf("--group-size") + 1] = "2";
        const Run r = qs::test::runCli(other);
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("state.json") && r.err.contains("another run") &&
                     r.err.contains("recipe.global") && r.err.contains("group_size") &&
                     r.err.contains("was 4") && r.err.contains("now 2"),
                 r.err.constData());
        QVERIFY(!promoted(out)); // nothing written
        // The state is kept: the interrupted command still resumes.
        QVERIFY(QFile::exists(statePath(out)));

        // Another world size: both sizes named.
        const Run ranks = qs::test::runCli(quantizeArgs(out, gptq) << "--resume"
                                                                   << "--nproc"
                                                                   << "2");
        QVERIFY(ranks.exitCode != 0);
        QVERIFY2(ranks.err.contains("world_size was 1, now 2"), ranks.err.constData());
        QVERIFY(!promoted(out));

        // A damaged block file (cut short): refused naming the file, nothing written.
        const QString blockFile = out + ".resume/rank-0/block-00000.safetensors";
        QVERIFY(QFile::copy(blockFile, blockFile + ".kept"));
        {
            QFile f(blockFile);
            QVERIFY(f.resize(f.size() / 2));
        }
        const Run damaged = qs::test::runCli(quantizeArgs(out, gptq) << "--resume");
        QVERIFY(damaged.exitCode != 0);
        QVERIFY2(damaged.err.contains("block-00000.safetensors"), damaged.err.constData());
        QVERIFY(!promoted(out));
        QVERIFY(QFile::remove(blockFile));
        QVERIFY(QFile::rename(blockFile + ".kept", blockFile));

        const Run resumed = qs::test::runCli(quantizeArgs(out, gptq) << "--resume"
                                                                     << "--quiet");
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        QVERIFY(QFile::exists(out + "/quark/config.json"));
        QVERIFY(!QFileInfo::exists(out + ".resume"));
    }

    // Two ranks started by hand (torchrun's variables); rank 1 is killed once it has saved a
    // block, rank 0 then stops too (it lost a rank), possibly one block further. The same
    // command over 2 ranks continues from the block both finished and writes what one
    // uninterrupted process writes (the ranks split the calibration exactly:
    // docs/distributed.md).
    void distributedRunResumesAfterALostRank() {
        const QStringList gptq{
            "--quant-scheme", "w_uint4_per_group_asym", "--group-size", "4", "--quant-algo",
            "gptq",           "--allow-unloadable"};
        const QString base = qs::test::tempDir("resume-dist-base");
        const Run whole = qs::test::runCli(quantizeArgs(base, gptq) << "--quiet");
        QVERIFY2(whole.exitCode == 0, whole.err.constData());
        const QMap<QString, QByteArray> expected = qs::test::filesForComparison(base);

        const QString out = qs::test::tempDir("resume-dist");
        QDir(out).removeRecursively();
        const int port = qs::test::freeLoopbackPort();
        QVERIFY(port > 0);
        const QStringList args = quantizeArgs(out, gptq) << "--resume"
                                                         << "--quiet"
                                                         << "--dist-timeout"
                                                         << "30";
        QProcess ranks[2];
        QVERIFY(qs::test::startRanks(ranks, 2, port, args));
        // Kill rank 1 when rank 0 has saved a block rank 1 has not (it is past the block's last
        // collective, saving or about to): the ranks then stop one block apart, the case where
        // rank 0 must go back to the earlier boundary. Polled; at the last block it is killed
        // whatever the counts, since a finished run leaves nothing to resume.
        const QString rank0State = out + ".resume/rank-0/state.json";
        const QString rank1State = out + ".resume/rank-1/state.json";
        for (;;) {
            const int at0 = readJson(rank0State)["finished_blocks"].toInt();
            const int at1 = readJson(rank1State)["finished_blocks"].toInt();
            if ((at1 >= 1 && at0 > at1) || at1 >= kBlocks - 2 ||
                ranks[1].state() != QProcess::Running)
                break;
            ranks[1].waitForFinished(2);
        }
        ::kill(pid_t(ranks[1].processId()), SIGKILL);
        ranks[1].waitForFinished(-1);
        QCOMPARE(ranks[1].exitStatus(), QProcess::CrashExit);
        QVERIFY(ranks[0].waitForFinished(120000));
        QCOMPARE(ranks[0].exitCode(), 1);
        QVERIFY(!promoted(out));
        const int finished0 =
            readJson(out + ".resume/rank-0/state.json")["finished_blocks"].toInt();
        const int finished1 = readJson(rank1State)["finished_blocks"].toInt();
        QVERIFY2(
            finished1 >= 1 && finished1 < kBlocks && finished0 >= finished1 &&
                finished0 <= finished1 + 1,
            qPrintable(
                QString("rank 0 finished %1 blocks, rank 1 %2").arg(finished0).arg(finished1)));

        const Run resumed = qs::test::runCli(quantizeArgs(out, gptq) << "--resume"
                                                                     << "--quiet"
                                                                     << "--nproc"
                                                                     << "2");
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        const QMap<QString, QByteArray> got = qs::test::filesForComparison(out);
        QCOMPARE(got.keys(), expected.keys());
        for (const QString& name : expected.keys())
            QVERIFY2(got[name] == expected[name],
                     qPrintable(name + " differs from the uninterrupted process's"));
        QVERIFY(!QFileInfo::exists(out + ".resume"));
    }

    void damagedStateNamesTheFile() {
        const QString out = qs::test::tempDir("resume-damaged");
        QDir(out).removeRecursively();
        QVERIFY(QDir().mkpath(out + ".resume/rank-0"));
        {
            QFile f(statePath(out));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("{\"format\": \"quantscope-resume-state\", \"version\": 1, \"key\": ");
        }
        const Run r = qs::test::runCli(quantizeArgs(out, {"--quant-scheme", "int8"}) << "--resume");
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("state.json") && r.err.contains("not valid JSON"),
                 r.err.constData());
        QVERIFY(!promoted(out));
        QDir(out + ".resume").removeRecursively(); // beside the temporary folder, not in it
    }
};

QS_TEST_GUILESS_MAIN(TestCliResume)
#include "tst_cli_resume.moc"
