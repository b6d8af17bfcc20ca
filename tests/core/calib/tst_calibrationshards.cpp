// What a run spread over ranks does with its calibration shards (calib/CalibrationShards.h), on a
// real group of two ranks (two threads of this process joined through c10d's TCPStore and Gloo
// over loopback): partial sums added in shard order, as one process adds its batches, and static
// min/max observers merged so both ranks freeze the scales one process would.
#include "LoopbackPort.h"
#include "TestMain.h"

#include "calib/CalibrationShards.h"
#include "dist/RankGroup.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <QtTest>

#include <array>
#include <functional>
#include <future>

namespace {

// Rank `rank`'s view of a run with `count` shards in which it holds `mine`.
qs::CalibrationShards shardsOn(const std::shared_ptr<qs::RankGroup>& group, int64_t count,
                               std::vector<int64_t> mine) {
    qs::CalibrationShards shards;
    shards.group = group.get();
    shards.count = count;
    shards.mine = std::move(mine);
    return shards;
}

// Runs body(rank) on both ranks at once (collectives need every rank) and returns their results.
template <typename T> std::array<T, 2> onBothRanks(const std::function<T(int)>& body) {
    auto other = std::async(std::launch::async, body, 1);
    T mine = body(0);
    return {mine, other.get()};
}

qs::quant::QuantSpec staticInt8() {
    qs::quant::QuantSpec spec = qs::quant::QuantSpec::defaults(qs::quant::DataType::Int8);
    spec.isDynamic = false;
    return spec;
}

} // namespace

class TestCalibrationShards : public QObject {
    Q_OBJECT

private:
    std::array<std::shared_ptr<qs::RankGroup>, 2> m_ranks;

private Q_SLOTS:
    void initTestCase() {
        if (!qs::RankGroup::availableOn("cpu"))
            QSKIP("this build has no Gloo (the pip LibTorch build): no group of two ranks");
        const int port = qs::test::freeLoopbackPort();
        QVERIFY(port > 0);
        m_ranks = onBothRanks<std::shared_ptr<qs::RankGroup>>([port](int rank) {
            qs::LaunchEnvironment env;
            env.rank = rank;
            env.worldSize = 2;
            env.masterPort = port;
            return qs::RankGroup::join(env, std::chrono::seconds(60));
        });
        QCOMPARE(m_ranks[1]->rank(), 1);
    }

    void partialSumsAddInShardOrder() {
        // Five shards: rank 0 holds 0, 2, 4 and rank 1 holds 1, 3. The values are chosen so that
        // the order of the additions shows in float64 (1e16 + 1 rounds back to 1e16).
        const std::vector<double> values = {1e16, 1.0, -1e16, 1.0, 3.0};
        double inShardOrder = values[0];
        for (size_t s = 1; s < values.size(); ++s)
            inShardOrder = inShardOrder + values[s];
        // What summing each rank's shards first, then the ranks, would give: another number,
        // so the check below can tell the orders apart.
        const double rankMajor = ((values[0] + values[2]) + values[4]) + (values[1] + values[3]);
        QVERIFY(inShardOrder != rankMajor);

        const auto sums = onBothRanks<double>([&](int rank) {
            qs::CalibrationShards shards;
            shards.group = m_ranks[size_t(rank)].get();
            shards.count = 5;
            std::vector<at::Tensor> mine;
            for (int64_t s = rank; s < 5; s += 2) {
                shards.mine.push_back(s);
                mine.push_back(at::tensor({values[size_t(s)]}, at::kDouble));
            }
            const at::Tensor total = qs::sumInShardOrder(shards, mine, "test");
            return total[0].item<double>();
        });
        // Exact (QCOMPARE would compare doubles fuzzily).
        QVERIFY2(sums[0] == inShardOrder && sums[1] == inShardOrder,
                 qPrintable(QString::number(sums[0], 'g', 17) + ", " +
                            QString::number(sums[1], 'g', 17)));
    }

    void broadcastGivesTheRootsTensorsExactly() {
        // What a GPTQ solve returns: int32 codes, float32 scales, an undefined tensor, a double.
        const std::vector<at::Tensor> sent = {
            at::randint(-8, 8, {3, 4}, at::kInt), at::randn({3, 2}), at::Tensor(),
            at::tensor({0.1, 1e-300}, at::kDouble), at::randn({5}).to(at::kBFloat16)};
        const auto got = onBothRanks<std::vector<at::Tensor>>([&](int rank) {
            qs::CalibrationShards shards;
            shards.group = m_ranks[size_t(rank)].get();
            // Rank 0 passes nothing: what it gets is rank 1's.
            return qs::broadcastFrom(shards, 1, rank == 1 ? sent : std::vector<at::Tensor>{});
        });
        for (const auto& tensors : got) {
            QCOMPARE(tensors.size(), sent.size());
            for (size_t i = 0; i < sent.size(); ++i) {
                QCOMPARE(tensors[i].defined(), sent[i].defined());
                if (!sent[i].defined())
                    continue;
                QCOMPARE(tensors[i].scalar_type(), sent[i].scalar_type());
                QVERIFY(at::equal(tensors[i], sent[i]));
            }
        }
    }

    void aRankWithAnotherCountOfPartsIsRefused() {
        const auto refused = onBothRanks<QString>([&](int rank) {
            const qs::CalibrationShards shards = shardsOn(m_ranks[size_t(rank)], 2, {rank});
            try {
                qs::sumInShardOrder(shards, {}, "model.layers.0.mlp.experts.3.up_proj");
            } catch (const qs::Error& e) {
                return QString::fromStdString(e.source() + ": " + e.what());
            }
            return QString();
        });
        for (const QString& r : refused)
            QVERIFY2(r.startsWith("model.layers.0.mlp.experts.3.up_proj") &&
                         r.contains("0 partial sums for its 1"),
                     qPrintable(r));
    }

    void observersTakeEveryRanksRange() {
        // Rank 0 sees [-1, 2], rank 1 sees [-3, 1]: the merged range is [-3, 2] on both, the
        // range one quantizer that saw both tensors freezes.
        const at::Tensor seen[2] = {at::tensor({-1.0f, 0.5f, 2.0f}), at::tensor({-3.0f, 1.0f})};
        qs::ActivationQuantizer both("layer", staticInt8());
        both.observe(seen[0]);
        both.observe(seen[1]);
        both.freeze();
        qs::ActivationQuantizer alone("layer", staticInt8());
        alone.observe(seen[0]);
        alone.freeze();
        QVERIFY(!at::equal(alone.params().scale, both.params().scale)); // the merge matters

        const auto scales = onBothRanks<at::Tensor>([&](int rank) {
            const qs::CalibrationShards shards = shardsOn(m_ranks[size_t(rank)], 2, {rank});
            std::vector<qs::LayerPlan> plans(1);
            plans[0].name = "model.layers.0.self_attn.q_proj";
            plans[0].input.emplace(plans[0].name, staticInt8());
            plans[0].input->observe(seen[rank]);
            qs::mergeObservers(shards, plans);
            plans[0].input->freeze();
            return plans[0].input->params().scale;
        });
        QVERIFY(at::equal(scales[0], both.params().scale));
        QVERIFY(at::equal(scales[1], both.params().scale));
    }

    void histogramObserversAreRefused() {
        qs::quant::QuantSpec percentile = staticInt8();
        percentile.observer = qs::quant::ObserverKind::Percentile;
        qs::Recipe recipe;
        recipe.global = qs::quant::QuantScheme{};
        recipe.global->input = staticInt8();
        QVERIFY(qs::observersMerge(recipe));
        recipe.global->input = percentile;
        QVERIFY(!qs::observersMerge(recipe));

        // Refused before any collective: neither rank waits for the other.
        const auto refused = onBothRanks<QString>([&](int rank) {
            const qs::CalibrationShards shards = shardsOn(m_ranks[size_t(rank)], 2, {rank});
            std::vector<qs::LayerPlan> plans(1);
            plans[0].name = "model.layers.1.mlp.up_proj";
            plans[0].input.emplace(plans[0].name, percentile);
            plans[0].input->observe(at::tensor({1.0f, 2.0f}));
            try {
                qs::mergeObservers(shards, plans);
            } catch (const qs::Error& e) {
                return QString::fromStdString(e.source() + " " + e.field());
            }
            return QString();
        });
        QCOMPARE(refused[0], QString("model.layers.1.mlp.up_proj observer"));
        QCOMPARE(refused[1], QString("model.layers.1.mlp.up_proj observer"));
    }
};

QS_TEST_APPLESS_MAIN(TestCalibrationShards)
#include "tst_calibrationshards.moc"
