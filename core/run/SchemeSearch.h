// The recipe search (`quantscope-cli recipe --auto`, the GUI's Design Recipe): a scheme per
// layer from a list of candidates that minimises the predicted mean KL divergence from the
// full-precision model under a size budget (or the size under a KL budget).
//
// How it predicts (docs/recipe-search.md):
//  - units: the linears that must share a scheme are one unit (q/k/v, and gate/up: linears fed
//    one norm's output, ModelFamily::scalingTemplate, which serving runtimes fuse into one
//    matmul; the experts of one MoE layer per kind, as sensitivity rows are); every other
//    linear is a unit of its own. Layers the base recipe excludes are not searched.
//  - size: each unit's weight bytes under each candidate as the Quark hf_format export stores
//    them (export/ExportSize.h, the one size definition), so effective_bits of the result is
//    exactly the sum the search budgets.
//  - cost: each unit's mean KL with only that unit quantized by the candidate, measured on the
//    evaluation windows after one calibration per candidate, every measurement against one
//    full-precision pass and starting at the unit's block (run/PlanRowEvaluator.h: what
//    `analyze --sensitivity` measures as "KL alone"). A recipe's predicted KL is the sum over
//    its units (errors of different layers add to first order), mapped through KlSumModel
//    (recipe/KlSumModel.h), fitted on each quantizing candidate's uniform recipe measured
//    beside the units: the sum saturates or grows faster on real models, measured.
//  - solver: the exact size/KL frontier of the separable problem (recipe/SchemeFrontier.h),
//    computed once; a budget picks a point on it.
// The chosen recipe is then run and measured like any evaluation (perplexity and fidelity).
// Torch-free header.
#pragma once

#include "eval/FidelityReport.h"
#include "eval/PerplexityResult.h"
#include "recipe/KlSumModel.h"
#include "recipe/Recipe.h"
#include "run/RunRequest.h"
#include "run/SearchUnits.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// The ladder searched when none is given: full precision, FP8 W8A8, uint4 per group of 128,
// MXFP4 weight-only.
const std::vector<std::string>& defaultSearchCandidates();

// How the per-unit costs are obtained. Measured: every unit's KL alone under every candidate
// (one evaluation from the unit's block per unit and candidate). Scaled: measured under one
// candidate per unit only (the one whose uniform recipe is the largest within the size budget,
// which most units take near it; else the unit's smallest), and carried to the others by
// the ratio of the unit's local output error energies (its linears on full-precision inputs,
// PlanRowEvaluator::localErrorEnergy: one pass of each block per candidate): KL alone over
// local error is nearly the same for every candidate of a unit while it spans orders of
// magnitude across units (docs/recipe-search.md, measured). About a third of the evaluations
// with three quantizing candidates.
enum class UnitCosts { Measured, Scaled };
const char* unitCostsName(UnitCosts costs);

struct SchemeSearchRequest {
    // Model, device, dtype, and the base recipe: calibration and evaluation data, algorithms,
    // exclusions (left unquantized, not searched). It must name no scheme and no KV cache.
    RunRequest run;
    std::vector<std::string> candidates; // scheme names or "none"; empty: the default ladder
    // Budgets: at most one size budget; with the KL budget, the smallest recipe within it
    // (which must then also fit the size budget given).
    std::optional<double> budgetBits;    // effective_bits at most this
    std::optional<uint64_t> budgetBytes; // the Quark hf_format model's tensor bytes at most this
    std::optional<double> budgetKl;      // the smallest recipe with predicted mean KL <= this
    bool measure = true;                 // run the chosen recipe and measure it
    // The per-unit costs and the anchors on the first `costWindows` evaluation windows (0: all
    // of them); the chosen recipe is measured on all. Fewer windows cost proportionally less
    // and estimate the KL from fewer tokens.
    int64_t costWindows = 0;
    UnitCosts unitCosts = UnitCosts::Measured;
    // Per-unit costs of an earlier search (unit name -> candidate -> KL alone), reused instead
    // of measured: a budget changed on the same model, data and base recipe needs no new
    // measurement. `knownCostsKey` must equal this request's costsKey(), or the search refuses
    // them (they were measured on something else).
    std::map<std::string, std::map<std::string, double>> knownCosts;
    std::vector<KlAnchor> knownAnchors; // the same search's uniform recipes (KlSumModel)
    std::string knownCostsKey;
    // Rounds of refinement in context after the frontier's pick (run/SchemeRefinement.h): each
    // measures the switches of every unit to its other candidates with the rest as picked, on
    // the cost windows, and re-solves. 0: none. A size budget only.
    int refineRounds = 0;
};

// What per-unit costs depend on: the model's headers, the base recipe (data, windows, algorithms,
// exclusions), device and dtype. A hash (hex).
std::string costsKey(const SchemeSearchRequest& request);

// One round of SchemeSearchRequest::refineRounds (run/SchemeRefinement.h).
struct RefinementRound {
    double klBefore = 0.0; // the round's starting pick, measured on the cost windows
    int evaluations = 0;   // switches measured in context
    // Per unit and option (SearchPoint::choice's indices): KL(start with the unit switched to
    // it) - klBefore, measured; 0 for the start's own option, nullopt where the unit cannot
    // take it.
    std::vector<std::vector<std::optional<double>>> delta;
    std::vector<int> proposed;     // the in-context solver's choice
    int unitsChanged = 0;          // units whose candidate the proposal changes
    double predictedKl = 0.0;      // klBefore + the proposal's summed in-context costs
    std::optional<double> klAfter; // the proposal measured (nullopt: it was the start)
    bool accepted = false;         // measured below klBefore: the next round starts from it
    // Proposals with at most half as many changes tried after one measured higher (the last
    // one tried is `proposed`).
    int smallerSteps = 0;
};

struct InContextRefinement {
    std::vector<RefinementRound> rounds;
    std::vector<int> choice;  // the refined pick
    double klMeasured = 0.0;  // of `choice`, on the cost windows
    double predictedKl = 0.0; // its prediction (its own measurement when no proposal was kept)
};

struct SearchPoint {
    uint64_t bytes = 0;       // Quark hf_format tensor bytes of the whole model
    uint64_t weightBytes = 0; // of every block linear's weight (excluded ones included)
    double bits = 0.0;        // effective_bits: 8 weightBytes / linear weights
    double klSum = 0.0;       // sum of the chosen units' KL alone
    double predictedKl = 0.0; // klSum through the search's KlSumModel
    // Candidate index per unit; candidates.size() for a unit no candidate fits when "none" is
    // not a candidate (left unquantized).
    std::vector<int> choice;
};

struct SchemeSearchResult {
    std::vector<std::string> candidates;
    std::vector<SearchUnit> units;
    int64_t linearWeights = 0;
    // The Quark hf_format model's bytes outside the searched units (their weights and their
    // activation scales): the excluded linears, embeddings, norms, head.
    uint64_t fixedBytes = 0;
    std::vector<SearchPoint> frontier; // ascending size, descending predicted KL
    bool frontierExact = true;
    size_t chosen = 0;  // index into frontier
    KlSumModel klModel; // fitted on every quantizing candidate's uniform recipe
    // SchemeSearchRequest::refineRounds > 0: what the rounds did, and the refined pick when it
    // differs from frontier[chosen] (predictedKl: the in-context prediction).
    std::optional<InContextRefinement> refinement;
    std::optional<SearchPoint> refined;
    // The recipe's point: the refined pick, else the frontier's.
    const SearchPoint& pick() const { return refined ? *refined : frontier[chosen]; }

    Recipe recipe;              // the pick's recipe
    double effectiveBits = 0.0; // of `recipe`, by exportSize
    uint64_t modelBytes = 0;    // of `recipe` in Quark hf_format, by exportSize
    std::optional<PerplexityResult> measuredPerplexity;
    std::optional<FidelityReport> measuredFidelity;
    std::optional<double> fpPerplexity; // on the windows measured last (all when measured)
    int64_t costWindows = 0;            // the windows the costs were measured on
    UnitCosts unitCosts = UnitCosts::Measured;
    // UnitCosts::Scaled: the candidate measured wherever a unit takes it (empty: each unit's
    // smallest).
    std::string scaledFrom;
    std::string costsKey;        // costsKey(request)
    bool costsReused = false;    // from SchemeSearchRequest::knownCosts
    double costSeconds = 0.0;    // calibrations and per-unit measurements
    double refineSeconds = 0.0;  // the refinement's rounds
    double measureSeconds = 0.0; // the chosen recipe's run
    std::vector<std::string> warnings;
};

// Throws qs::Error naming the flag for a bad request (no candidates that quantize, an unknown
// scheme, a base recipe with schemes, an infeasible budget) before the costs are measured where
// the model's headers suffice, and qs::Cancelled when `progress` returns false.
SchemeSearchResult
runSchemeSearch(const SchemeSearchRequest& request,
                const std::function<bool(double, const std::string&)>& progress = {});

} // namespace qs
