// The recipe search's solver against brute force: on small random instances every choice is
// enumerated, and the frontier must be exactly the choices no other beats in both size and cost,
// with the sums the solver reports (both add in unit order from 0, so they are the same doubles);
// a budget's pick must be the brute-force optimum.
#include "TestMain.h"
#include "recipe/SchemeFrontier.h"

#include <QtTest>

#include <random>
#include <stdexcept>

namespace {

struct Choice {
    uint64_t bytes;
    double cost;
    std::vector<int> choice;
};

std::vector<Choice> enumerate(const qs::FrontierUnits& units) {
    std::vector<Choice> all{{0, 0.0, {}}};
    for (const auto& unit : units) {
        std::vector<Choice> next;
        for (const Choice& c : all)
            for (size_t o = 0; o < unit.size(); ++o)
                if (unit[o]) {
                    Choice n = c;
                    n.bytes += unit[o]->bytes;
                    n.cost += unit[o]->cost;
                    n.choice.push_back(int(o));
                    next.push_back(n);
                }
        all = next;
    }
    return all;
}

qs::FrontierUnits randomUnits(std::mt19937& rng, int units, int options) {
    // Sizes from a few classes (as layers of equal shape give equal sizes), so ties in size
    // and in sums happen; some options unavailable (a layer that does not fit a scheme).
    std::uniform_int_distribution<int> size(1, 6), cost(0, 1000), drop(0, 5);
    qs::FrontierUnits u(static_cast<size_t>(units));
    for (auto& unit : u) {
        for (int o = 0; o < options; ++o) {
            if (o > 0 && drop(rng) == 0)
                unit.push_back(std::nullopt);
            else
                unit.push_back(qs::FrontierOption{uint64_t(size(rng) * 16), cost(rng) / 997.0});
        }
    }
    return u;
}

} // namespace

class TestSchemeFrontier : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void frontierEqualsBruteForce() {
        std::mt19937 rng(7);
        int checkedPoints = 0;
        for (int trial = 0; trial < 40; ++trial) {
            const qs::FrontierUnits units = randomUnits(rng, 2 + trial % 5, 2 + trial % 3);
            const qs::Frontier f = qs::paretoFrontier(units);
            QVERIFY(f.exact);
            const std::vector<Choice> all = enumerate(units);
            // Every brute-force choice is matched or beaten by a frontier point.
            for (const Choice& c : all) {
                bool covered = false;
                for (const qs::FrontierPoint& p : f.points)
                    covered = covered || (p.bytes <= c.bytes && p.cost <= c.cost);
                QVERIFY(covered);
            }
            for (size_t i = 0; i < f.points.size(); ++i) {
                const qs::FrontierPoint& p = f.points[i];
                // A real choice whose sums are the ones reported...
                QCOMPARE(p.choice.size(), units.size());
                uint64_t bytes = 0;
                double cost = 0.0;
                for (size_t u = 0; u < units.size(); ++u) {
                    const auto& o = units[u][size_t(p.choice[u])];
                    QVERIFY(o.has_value());
                    bytes += o->bytes;
                    cost += o->cost;
                }
                QVERIFY(bytes == p.bytes);
                QVERIFY(cost == p.cost);
                // ...that nothing dominates, in ascending size and strictly descending cost.
                for (const Choice& c : all)
                    QVERIFY(!(c.bytes <= p.bytes && c.cost < p.cost));
                if (i > 0) {
                    QVERIFY(p.bytes > f.points[i - 1].bytes);
                    QVERIFY(p.cost < f.points[i - 1].cost);
                }
                ++checkedPoints;
            }
        }
        QVERIFY(checkedPoints > 100);
    }

    void budgetsPickTheBruteForceOptimum() {
        std::mt19937 rng(11);
        for (int trial = 0; trial < 20; ++trial) {
            const qs::FrontierUnits units = randomUnits(rng, 5, 3);
            const qs::Frontier f = qs::paretoFrontier(units);
            const std::vector<Choice> all = enumerate(units);
            for (uint64_t budget = 0; budget <= 5 * 6 * 16; budget += 8) {
                std::optional<double> best;
                for (const Choice& c : all)
                    if (c.bytes <= budget && (!best || c.cost < *best))
                        best = c.cost;
                const std::optional<size_t> pick = f.leastCostWithin(budget);
                QCOMPARE(pick.has_value(), best.has_value());
                if (pick) {
                    QVERIFY(f.points[*pick].cost == *best);
                    QVERIFY(f.points[*pick].bytes <= budget);
                }
            }
            for (double maxCost : {0.0, 0.5, 1.0, 2.0, 5.0}) {
                std::optional<uint64_t> smallest;
                for (const Choice& c : all)
                    if (c.cost <= maxCost && (!smallest || c.bytes < *smallest))
                        smallest = c.bytes;
                const std::optional<size_t> pick = f.smallestWithCost(maxCost);
                QCOMPARE(pick.has_value(), smallest.has_value());
                if (pick)
                    QVERIFY(f.points[*pick].bytes == *smallest);
            }
        }
    }

    void thinningIsReported() {
        std::mt19937 rng(3);
        const qs::FrontierUnits units = randomUnits(rng, 8, 4);
        const qs::Frontier full = qs::paretoFrontier(units);
        QVERIFY(full.points.size() > 8);
        const qs::Frontier thin = qs::paretoFrontier(units, 8);
        QVERIFY(!thin.exact);
        QCOMPARE(thin.thinnedTo, size_t(8));
        QVERIFY(thin.points.size() <= 8);
        // The ends survive: the smallest choice is still found.
        QVERIFY(thin.points.front().bytes == full.points.front().bytes);
    }

    void unitWithoutOptionIsRefused() {
        qs::FrontierUnits units(2);
        units[0].push_back(qs::FrontierOption{16, 0.1});
        units[1].push_back(std::nullopt);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::paretoFrontier(units));
    }
};

QS_TEST_GUILESS_MAIN(TestSchemeFrontier)
#include "tst_schemefrontier.moc"
