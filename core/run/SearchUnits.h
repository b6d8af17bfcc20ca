// The recipe search's units (run/SchemeSearch.h): the linears that must share a scheme, grouped,
// their sizes and costs per candidate, and the recipe of a choice of one candidate per unit.
// Torch-free header.
#pragma once

#include "export/ExportSize.h"
#include "recipe/Recipe.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qs {

struct ModelHandle;

// The candidate that leaves a unit unquantized (stored as the checkpoint stores its weight).
constexpr const char* kUnquantizedCandidate = "none";

struct SearchUnit {
    std::string name;                  // a linear, "…self_attn.{q,k,v}_proj", or an experts row
    std::vector<std::string> layers;   // its linears (for an experts row, the pattern's matches)
    std::vector<std::string> patterns; // what the recipe names it by (layer names or the pattern)
    int block = 0;
    int64_t weights = 0;
    // Per candidate: the unit's weight bytes in Quark hf_format (what effective_bits counts) and
    // its measured KL alone;
    // nullopt where a layer does not fit the candidate (the reason in `unfit`).
    std::vector<std::optional<uint64_t>> bytes;
    std::vector<uint64_t> activationBytes; // its static quantizers' scales, per candidate
    std::vector<double> kl;
    std::vector<std::string> unfit;
    // UnitCosts::Scaled: per candidate, the unit's local output error energy (0 where it does
    // not fit), and the candidate whose KL alone was measured (the others' scaled from it).
    std::vector<double> localError;
    int measuredCandidate = -1;
};

// The units: linears the base recipe quantizes, grouped (q/k/v, and gate/up: linears fed one
// norm's output, ModelFamily::scalingTemplate, which serving runtimes fuse into one matmul; the
// experts of one MoE layer per kind, as sensitivity rows are; every other linear alone), in
// model order. Sizes and costs are left empty.
std::vector<SearchUnit> buildSearchUnits(const ModelHandle& handle, const Recipe& base);

// The candidate a choice names: candidates[choice], or "none" for the index past them (a unit
// no candidate fits, SearchPoint::choice).
std::string searchCandidateName(const std::vector<std::string>& candidates, int choice);

// The recipe of one choice (candidate index per unit) over `base`: the most common quantized
// candidate (by weights) becomes the global scheme, the other units get layer overrides by their
// patterns, "none" units are excluded. A choice past the candidates (a unit no candidate fits,
// SearchPoint::choice) is "none".
Recipe recipeForChoice(const Recipe& base, const std::vector<std::string>& candidates,
                       const std::vector<SearchUnit>& units, const std::vector<int>& choice);

// The size of `recipe` as written (exportSize, Quark hf_format), after checking that it plans
// every unit's layers with the candidate `choice` names; qs::Error ("internal error") if not.
ExportSizeReport writtenRecipeSize(const std::string& modelDir, const Recipe& recipe,
                                   const std::vector<std::string>& candidates,
                                   const std::vector<SearchUnit>& units,
                                   const std::vector<int>& choice);

} // namespace qs
