#pragma once

#include "analysis/LayerReport.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qs {

// Calibration tokens the router sent to one expert of a mixture-of-experts layer: the rows its
// linears saw on the full-precision stream (LayerReport::input.tokens). An expert that gets
// little of the calibration set is quantized from statistics resting on few tokens (Quark's
// MoE guidance: calibrate with enough data that every expert is reached).
struct ExpertTokens {
    std::string expert; // module, e.g. "model.layers.3.mlp.experts.17"
    int block = -1;
    int64_t tokens = 0;
    double shareOfEven = 0.0; // tokens / (the layer's routed tokens / its experts)
    bool rare = false;        // shareOfEven < rareShare
};

// One entry per expert found among `layers` (names "<moe>.experts.<e>.<linear>"), in model
// order; empty for a dense model. Experts that never appear in `layers` (all their linears
// excluded) are not listed.
std::vector<ExpertTokens> expertRouting(const std::vector<LayerReport>& layers,
                                        double rareShare = 0.25);

} // namespace qs
