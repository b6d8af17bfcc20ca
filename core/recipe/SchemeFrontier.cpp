#include "recipe/SchemeFrontier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qs {

namespace {

// A partial choice after some units: its sums and the step that made it (the partial choice
// it extends at the previous unit, and the option taken), so any final point can be walked
// back to its options without storing a whole choice per point.
struct Partial {
    uint64_t bytes;
    double cost;
    uint32_t parent;
    int option;
};

} // namespace

std::optional<size_t> Frontier::leastCostWithin(uint64_t maxBytes) const {
    std::optional<size_t> best;
    for (size_t i = 0; i < points.size() && points[i].bytes <= maxBytes; ++i)
        best = i; // costs fall along the frontier: the last that fits is the least
    return best;
}

std::optional<size_t> Frontier::smallestWithCost(double maxCost) const {
    for (size_t i = 0; i < points.size(); ++i)
        if (points[i].cost <= maxCost)
            return i;
    return std::nullopt;
}

Frontier paretoFrontier(const FrontierUnits& units, size_t maxPoints) {
    Frontier frontier;
    std::vector<std::vector<Partial>> stages;
    stages.reserve(units.size());
    std::vector<Partial> current{{0, 0.0, 0, -1}};
    for (size_t u = 0; u < units.size(); ++u) {
        std::vector<Partial> next;
        next.reserve(current.size() * units[u].size());
        for (size_t p = 0; p < current.size(); ++p)
            for (size_t o = 0; o < units[u].size(); ++o)
                if (const auto& opt = units[u][o])
                    next.push_back({current[p].bytes + opt->bytes, current[p].cost + opt->cost,
                                    uint32_t(p), int(o)});
        if (next.empty())
            throw std::invalid_argument("unit " + std::to_string(u) + " has no option");
        // Keep what nothing smaller or equal in size beats in cost: sorted by size (ties by cost,
        // then by choice so the result does not depend on the sort's stability), a point stays
        // only when its cost is strictly below every smaller one's.
        std::sort(next.begin(), next.end(), [](const Partial& a, const Partial& b) {
            if (a.bytes != b.bytes)
                return a.bytes < b.bytes;
            if (a.cost != b.cost)
                return a.cost < b.cost;
            if (a.parent != b.parent)
                return a.parent < b.parent;
            return a.option < b.option;
        });
        std::vector<Partial> kept;
        for (const Partial& c : next)
            if (kept.empty() || c.cost < kept.back().cost)
                kept.push_back(c);
        // Thinning (rare: the frontier of distinct sizes grows with the units' size classes):
        // keep evenly spaced points, the two ends included.
        if (kept.size() > maxPoints && maxPoints >= 2) {
            std::vector<Partial> thin;
            thin.reserve(maxPoints);
            for (size_t i = 0; i < maxPoints; ++i)
                thin.push_back(kept[i * (kept.size() - 1) / (maxPoints - 1)]);
            kept = std::move(thin);
            frontier.exact = false;
            frontier.thinnedTo = maxPoints;
        }
        stages.push_back(kept);
        current = std::move(kept);
    }
    frontier.points.reserve(current.size());
    for (size_t i = 0; i < current.size(); ++i) {
        FrontierPoint point{current[i].bytes, current[i].cost, std::vector<int>(units.size())};
        uint32_t at = uint32_t(i);
        for (size_t u = units.size(); u-- > 0;) {
            point.choice[u] = stages[u][at].option;
            at = stages[u][at].parent;
        }
        frontier.points.push_back(std::move(point));
    }
    return frontier;
}

} // namespace qs
