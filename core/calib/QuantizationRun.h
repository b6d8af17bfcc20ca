#pragma once

#include "analysis/LayerReport.h"
#include "calib/CalibrationPipeline.h"
#include "eval/PerplexityResult.h"
#include "model/Compute.h"
#include "recipe/Recipe.h"
#include "tokenize/TokenizerLoader.h"

#include <optional>
#include <string>

namespace qs {

// One headless quantization run over a recipe: what `quantscope-cli eval/analyze/quantize` and
// the GUI's runs do.
struct QuantizationRequest {
    std::string modelDir;
    Recipe recipe;
    ComputeOptions compute;
    bool analyze = false;
    bool evaluate = false; // perplexity of the fake-quantized model on recipe.evaluation
    std::string outDir;    // write a fake-quantized checkpoint here (empty: none)
    TokenizerBackend tokenizer = TokenizerBackend::Auto;
    // Streams each block's layer reports as the block finishes (GUI runs).
    std::function<void(int block, const std::vector<LayerReport>& layers)> onBlockReports;
};

struct QuantizationOutcome {
    Recipe recipe; // as run, provenance filled in
    std::optional<PerplexityResult> perplexity;
    AnalysisReport report;            // layers filled when analyze was asked
    std::vector<std::string> skipped; // unfit layers left unquantized ("skip" policy)
    std::vector<double> blockSeconds;
};

// Throws qs::Error for bad input (naming file/field), qs::Cancelled when progress says stop.
QuantizationOutcome runQuantization(const QuantizationRequest& request,
                                    const PipelineProgress& progress = {});

// Whether a recipe needs calibration data: a static activation or output quantizer somewhere.
bool recipeNeedsCalibration(const Recipe& recipe,
                            const std::vector<std::pair<std::string, std::string>>& linears);

} // namespace qs
