// Joining a distributed run's group (dist/RankGroup.h) the way launchers start ranks: torchrun's
// elastic agent serving the rendezvous store itself (every rank its client, rank 0 included), a
// world of one on the CPU joining nothing, one on a GPU joining over NCCL (on a GPU machine),
// and a local rank without its GPU refused in words.
#include "LoopbackPort.h"
#include "TestDevice.h"
#include "TestMain.h"

#include "dist/RankGroup.h"
#include "util/Error.h"

#include <QtTest>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <array>
#include <future>

namespace {

qs::LaunchEnvironment rankOf(int rank, int worldSize, int port) {
    qs::LaunchEnvironment env;
    env.launcher = "torchrun";
    env.rank = rank;
    env.worldSize = worldSize;
    env.localRank = rank;
    env.masterPort = port;
    return env;
}

} // namespace

class TestRankGroup : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void joinsTheStoreTorchrunsAgentServes() {
        if (!qs::RankGroup::availableOn("cpu"))
            QSKIP("this build has no Gloo (the pip LibTorch build): no group of two ranks");
        const int port = qs::test::freeLoopbackPort();
        QVERIFY(port > 0);
        // What torchrun's agent holds at MASTER_ADDR:MASTER_PORT before it starts the ranks
        // (torch/distributed/elastic: a TCPStore server): rank 0 cannot bind the port then.
        c10d::TCPStoreOptions agentOptions;
        agentOptions.port = uint16_t(port);
        agentOptions.isServer = true;
        agentOptions.waitWorkers = false;
        agentOptions.timeout = std::chrono::seconds(60);
        auto agent = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", agentOptions);

        auto join = [port](int rank) {
            qs::LaunchEnvironment env = rankOf(rank, 2, port);
            env.agentStore = true;
            env.restartAttempt = 1;
            try {
                auto group = qs::RankGroup::join(env, std::chrono::seconds(60));
                // One collective, so both ranks really talk through the group.
                return std::make_pair(group->backend(), group->sum({double(rank + 1)}).front());
            } catch (const qs::Error& e) { // what the comparison below then shows
                return std::make_pair(std::string(e.what()), 0.0);
            }
        };
        auto other = std::async(std::launch::async, join, 1);
        const auto mine = join(0);
        const auto theirs = other.get();
        QCOMPARE(QString::fromStdString(mine.first), QString("gloo"));
        QCOMPARE(mine.second, 3.0);
        QCOMPARE(theirs.second, 3.0);
    }

    void aWorldOfOneOnTheCpuJoinsNothing() {
        const auto group = qs::RankGroup::join(rankOf(0, 1, 1), std::chrono::seconds(1));
        QCOMPARE(QString::fromStdString(group->backend()), QString("none"));
        QCOMPARE(group->sum({2.5}).front(), 2.5);
    }

    void aWorldOfOneOnAGpuJoinsOverNccl() {
        std::string whyNot;
        const std::optional<at::Device> gpu = qs::test::acceleratorUnderTest(&whyNot);
        if (!gpu)
            QSKIP(whyNot.c_str());
        const int port = qs::test::freeLoopbackPort();
        const auto group =
            qs::RankGroup::join(rankOf(0, 1, port), std::chrono::seconds(60), gpu->str());
        if (group->backend() == "none")
            QSKIP("this build has no NCCL: a world of one on a GPU joins nothing");
        QCOMPARE(QString::fromStdString(group->backend()), QString("nccl"));
        // Each collective through the GPU and back: a world of one gives its own values.
        const std::vector<double> values = {1.0 / 3.0, -2.5e300, 7.0};
        QVERIFY(group->sum(values) == values);
        QVERIFY(group->min(values) == values);
        std::vector<double> all(values.size());
        group->allGather(values.data(), values.size(), all.data());
        QVERIFY(all == values);
        std::vector<double> same = values;
        group->broadcast(same.data(), same.size(), 0);
        QVERIFY(same == values);
    }

    void aLocalRankWithoutItsGpuIsRefused() {
        // Rank 1 of a node asks for GPU 1; a machine with fewer GPUs is told in words, before
        // any rendezvous (port 1 would not answer).
        try {
            qs::RankGroup::join(rankOf(1, 2, 1), std::chrono::seconds(1), "cuda:1");
            QFAIL("a rank whose GPU is missing joined");
        } catch (const qs::Error& e) {
            if (QString(e.what()).contains("could not join"))
                QSKIP("this machine has two GPUs or more: GPU 1 exists");
            QCOMPARE(QString::fromStdString(e.field()), QString("LOCAL_RANK"));
            QVERIFY2(QString(e.what()).contains("GPU 1"), e.what());
        }
    }
};

QS_TEST_APPLESS_MAIN(TestRankGroup)
#include "tst_rankgroup.moc"
