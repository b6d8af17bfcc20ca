#pragma once

#include <string>
#include <vector>

namespace qs {

// Sensitivity of the perplexity and of the fidelity to the full-precision model (mean KL
// divergence and top-1 agreement, eval/FidelityReport.h) to each quantized linear
// (run/SensitivityRun.h measures it):
//  alone:    only this layer quantized (KV-cache quantization off);
//  all-but:  the whole recipe except this layer. Torch-free value types.
struct SensitivityRow {
    // The linear; for the experts of a mixture-of-experts layer, one row per linear kind named
    // by the pattern over them ("model.layers.3.mlp.experts.*.down_proj").
    std::string layer;
    double alonePerplexity = 0.0;
    double allButPerplexity = 0.0;
    double aloneKl = 0.0; // mean KL(full precision || only this layer quantized)
    double aloneSameTop = 0.0;
    double allButKl = 0.0;
    double allButSameTop = 0.0;
};

struct SensitivityResult {
    double fpPerplexity = 0.0;   // nothing quantized, same evaluation windows
    double fullPerplexity = 0.0; // the whole recipe
    double fullKl = 0.0;         // the whole recipe against full precision
    double fullSameTop = 0.0;
    std::vector<SensitivityRow> rows; // in model order
};

} // namespace qs
