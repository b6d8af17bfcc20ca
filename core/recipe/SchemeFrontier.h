// The exact size/cost frontier of a separable per-layer choice (the recipe search,
// run/SchemeSearch.h): each unit (a linear, or linears that must share a scheme) takes one of its
// options, each option with a size in bytes and a predicted cost (mean KL) that add over units.
// The frontier is every choice that no other beats in both size and cost (a multiple-choice
// knapsack solved for every budget at once): merged unit by unit, keeping after each unit only
// the partial choices no other partial choice dominates, which loses no optimum because costs
// and sizes add. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace qs {

struct FrontierOption {
    uint64_t bytes = 0;
    double cost = 0.0;
};

// units[u][o]: option o of unit u; nullopt where the unit cannot take it.
using FrontierUnits = std::vector<std::vector<std::optional<FrontierOption>>>;

struct FrontierPoint {
    uint64_t bytes = 0;      // sum over units, in unit order
    double cost = 0.0;       // sum over units, in unit order (from 0.0)
    std::vector<int> choice; // option per unit
};

struct Frontier {
    // Ascending bytes, strictly descending cost: the first point is the smallest choice, the
    // last the one of least cost.
    std::vector<FrontierPoint> points;
    // False when the partial frontier outgrew the point limit and was thinned (the points kept
    // are real choices with their exact sums, but a better one may have been dropped);
    // `thinnedTo` is then the limit.
    bool exact = true;
    size_t thinnedTo = 0;

    // The point of least cost within `maxBytes`; nullopt when even the smallest exceeds it.
    std::optional<size_t> leastCostWithin(uint64_t maxBytes) const;
    // The smallest point whose cost is at most `maxCost`; nullopt when none is.
    std::optional<size_t> smallestWithCost(double maxCost) const;
};

// Throws std::invalid_argument when a unit has no option at all.
Frontier paretoFrontier(const FrontierUnits& units, size_t maxPoints = 200000);

} // namespace qs
