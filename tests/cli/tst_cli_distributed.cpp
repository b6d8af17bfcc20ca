// quantscope-cli eval spread over ranks (--nproc: torchrun's variables, c10d's TCPStore and Gloo
// over loopback): the same figures, double for double, at 1, 2 and 4 ranks, full precision and
// quantized with static calibration; and the launches that must fail, failing in plain words.
#include "TestMain.h"
#include "TestSupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
                          << "64"
                          << "--no-fidelity";
    }
    static QJsonObject json(const Run& r) { return QJsonDocument::fromJson(r.out).object(); }
    // A loopback port nothing listens on (the kernel's pick for port 0).
    static int freePort() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(addr);
        int port = -1;
        if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
            port = ntohs(addr.sin_port);
        if (fd >= 0)
            ::close(fd);
        return port;
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
        }
    }

    void commandsThatDoNotSplitAreRefused() {
        const Run r = qs::test::runCli({"quantize", m_model, "--quant-scheme", "uint4_wo_32",
                                        "--out", qs::test::tempDir("q"), "--nproc", "2"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("does not split its work across ranks"), r.err.constData());
    }

    void fidelityIsNotGatheredYet() {
        QStringList args = int8Args();
        args.removeAll("--no-fidelity");
        const Run r = qs::test::runCli(args << "--nproc"
                                            << "2");
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("--no-fidelity"), r.err.constData());
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
        const int port = freePort();
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
