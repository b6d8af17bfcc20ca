// The recipe search's refinement in context (`recipe --auto --refine N`, run/SchemeSearch.h).
//
// Why: the search's costs are each unit's KL *alone* (everything else in full precision), and
// a recipe's KL is predicted from their sum. Where most units are quantized, the layers' errors
// interact and the ranking alone can be wrong: on stories260K at 8 bits, with int8 everywhere
// else, uint4 on layer 0's o_proj adds 0.00006 to the KL and on layers 1 to 4's 0.0007 to
// 0.0011, while alone layer 2's is the cheapest (docs/recipe-search.md, measured).
//
// What a round does, from a pick P (first the frontier's):
//  1. measures P (every unit by its chosen candidate's calibrated plan) from block 0 on the
//     cost windows, keeping every block's input;
//  2. for every unit u and every other candidate c it fits, measures P with u switched to c,
//     from u's block on P's stream there: the cost of the switch in context,
//     delta(u, c) = KL(P with u -> c) - KL(P), 0 for P's own choice;
//  3. solves the separable problem again with these costs (the same exact frontier, the same
//     budget): P' = argmin sum delta within the budget, predicted KL(P) + sum delta;
//  4. measures P' (the next round's step 1) and keeps it only when it measures below P. Where
//     the switches' costs do not add over many units at once (a saturating model), P' can
//     measure higher; then P'' with at most half as many changed units (each change charged a
//     constant, the least that halves them, by bisection, over the same measured costs) is
//     measured, and so on down to one change.
// It stops when a round proposes P again, when no proposal measures lower, or after N rounds.
// Every decision is made on the cost windows: with few of them it can fit their noise (on the
// 100M synthetic with one window of 256 tokens the kept proposals measured higher on all 8).
// A round costs one evaluation from block 0 and one from its block per (unit, other candidate),
// except the switches no choice within the budget can hold (measured or not, never picked).
//
// Each unit's plans come from its candidate's own calibration (as the costs alone do): exact
// for weight-only schemes without activation-dependent algorithms, an approximation for static
// activation scales, which a calibration of the mixed recipe would observe on a differently
// quantized stream.
#pragma once

#include "calib/CalibrationPipeline.h"
#include "recipe/SchemeFrontier.h"
#include "run/PlanRowEvaluator.h"
#include "run/SchemeSearch.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qs {

struct RefinementInputs {
    const std::vector<SearchUnit>* units = nullptr;
    // Per candidate index, that candidate's calibrated plans of every block (empty for the
    // candidate that quantizes nothing).
    std::vector<std::vector<std::vector<LayerPlan>>>* plansOf = nullptr;
    // The solver's options per unit (sizes as the budget counts them; costs ignored): an option
    // index past the candidates is the "left unquantized" fallback (SearchPoint::choice).
    const FrontierUnits* options = nullptr;
    uint64_t optionBudget = 0; // the budget in the options' bytes
    int rounds = 0;
};

// Refines `start` (a choice within the budget). Throws qs::Cancelled when `progress` returns false.
InContextRefinement
refineInContext(PlanRowEvaluator& rows, CalibrationPipeline& pipeline, const RefinementInputs& in,
                const std::vector<int>& start,
                const std::function<bool(double, const std::string&)>& progress);

} // namespace qs
