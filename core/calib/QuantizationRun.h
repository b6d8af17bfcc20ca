#pragma once

#include "analysis/LayerReport.h"
#include "calib/CalibrationPipeline.h"
#include "eval/PerplexityResult.h"
#include "model/Compute.h"
#include "model/ModelLoader.h"
#include "recipe/Recipe.h"
#include "tokenize/TokenizerLoader.h"

#include <optional>
#include <string>

namespace qs {

// One headless run over a recipe: what `quantscope-cli eval/analyze/quantize` and the GUI's
// runs do. A recipe without any scheme evaluates the full-precision model through the same
// pipeline, so fp32 and quantized perplexities come from one protocol.
struct QuantizationRequest {
    std::string modelDir;
    Recipe recipe;
    ComputeOptions compute;
    bool analyze = false;
    bool evaluate = false; // perplexity of the fake-quantized model on recipe.evaluation
    std::string outDir;    // write the export(s) here (empty: none)
    // Export formats (export/ExportFormat.h names or aliases). Empty: the recipe's export_targets,
    // else "fake". Given, they replace the recipe's export_targets. With several formats each
    // goes to outDir/<format>.
    std::vector<std::string> exportFormats;
    // Write layouts the format holds but its consumers cannot load (as Quark itself does),
    // with a warning per layer instead of a refusal.
    bool allowUnloadable = false;
    std::string ggufType = "auto"; // ggufTypeNames() (GGUF export only)
    TokenizerBackend tokenizer = TokenizerBackend::Auto;
    // Keep every block's plans in the outcome (sensitivity reuses one calibration).
    bool keepPlans = false;
    // Warnings (patterns matching no layer, fewer windows than asked) are errors, raised before
    // any block runs (--strict).
    bool strict = false;
    // Streams each block's layer reports as the block finishes (GUI runs).
    std::function<void(int block, const std::vector<LayerReport>& layers)> onBlockReports;
};

struct QuantizationOutcome {
    Recipe recipe; // as run, provenance filled in
    std::optional<PerplexityResult> perplexity;
    AnalysisReport report;            // layers filled when analyze was asked
    std::vector<std::string> skipped; // unfit layers left unquantized ("skip" policy)
    std::vector<double> blockSeconds;
    std::vector<std::vector<LayerPlan>> plans; // keepPlans only
    std::vector<std::string> warnings;         // PreparedRun::warnings
};

// A request checked and made ready: the recipe validated (provenance filled in), the model
// opened and instantiated, the planner checked against the model's shapes, the algorithms'
// transforms made, the calibration and evaluation ids tokenized. Everything that can fail on
// bad input fails here, before any block is read.
struct PreparedRun {
    Recipe recipe;
    ModelHandle handle;
    std::unique_ptr<LayerPlanner> planner;
    std::vector<std::shared_ptr<BlockTransform>> transforms;
    at::Tensor calibration; // int64 [N, L]; N = 0 when nothing needs calibration
    at::Tensor evaluation;  // int64 [W, L'] or undefined
    int64_t evalTokens = 0; // tokens of the whole evaluation text
    std::unique_ptr<DecoderModel> model;
    // What the run does differently from what was asked, said once (the CLI prints them, the
    // GUI shows them): patterns that match no layer, fewer windows than asked.
    std::vector<std::string> warnings;
    std::vector<std::string> exportFormats; // canonical names, checked against the model
};
PreparedRun prepareRun(const QuantizationRequest& request, const PipelineProgress& progress = {});

// The protocol's figures from an NLL sum over `prepared.evaluation`.
PerplexityResult perplexityResult(const PreparedRun& prepared, double nllSum, int64_t predicted,
                                  double seconds);

// Throws qs::Error for bad input (naming file/field), qs::Cancelled when progress says stop.
// Everything that can be checked before the work (recipe, model, data files, shapes,
// algorithms, export targets) is checked before the first block is read.
QuantizationOutcome runQuantization(const QuantizationRequest& request,
                                    const PipelineProgress& progress = {});

// The full-precision perplexity of a model on a text: runQuantization with a recipe that
// quantizes nothing.
// `warnings`, when given, receives the run's warnings (PreparedRun::warnings).
PerplexityResult evaluateModelOnText(const std::string& modelDir, const EvalRequest& request,
                                     const PipelineProgress& progress = {},
                                     TokenizerBackend backend = TokenizerBackend::Auto,
                                     std::vector<std::string>* warnings = nullptr);

} // namespace qs
