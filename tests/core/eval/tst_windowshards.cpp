// Evaluation windows cut into whole scoring batches and dealt to ranks: every window once, in
// order within a rank, shard s on rank s mod ranks, ranks past the last shard empty.
#include "TestMain.h"

#include "eval/WindowShards.h"

#include <QtTest>

#include <set>

class TestWindowShards : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void batchesDealtRoundRobin() {
        const qs::WindowShards shards(20, 8); // batches [0, 8), [8, 16), [16, 20)
        QCOMPARE(shards.count(), int64_t(3));
        QCOMPARE(shards.shardsOf(0, 2), (std::vector<int64_t>{0, 2}));
        QCOMPARE(shards.shardsOf(1, 2), (std::vector<int64_t>{1}));
        std::vector<int64_t> rank0 = shards.windowsOf(0, 2);
        QCOMPARE(rank0.size(), size_t(12));
        QCOMPARE(rank0.front(), int64_t(0));
        QCOMPARE(rank0[8], int64_t(16)); // shard 2 follows shard 0 on rank 0
        QCOMPARE(rank0.back(), int64_t(19));
        QVERIFY(shards.windowsOf(3, 4).empty()); // a fourth rank has nothing to do
    }

    void everyWindowExactlyOnce() {
        for (int64_t windows : {1, 7, 8, 9, 33})
            for (int64_t batch : {1, 3, 8})
                for (int ranks : {1, 2, 3, 5}) {
                    const qs::WindowShards shards(windows, batch);
                    std::multiset<int64_t> seen;
                    for (int r = 0; r < ranks; ++r) {
                        const std::vector<int64_t> mine = shards.windowsOf(r, ranks);
                        QVERIFY(std::is_sorted(mine.begin(), mine.end()));
                        seen.insert(mine.begin(), mine.end());
                    }
                    QCOMPARE(int64_t(seen.size()), windows);
                    QCOMPARE(int64_t(std::set<int64_t>(seen.begin(), seen.end()).size()), windows);
                }
    }
};

QS_TEST_APPLESS_MAIN(TestWindowShards)
#include "tst_windowshards.moc"
