#pragma once

#include "analysis/LayerReport.h"
#include "analysis/Sensitivity.h"
#include "eval/FidelityReport.h"
#include "eval/PerplexityResult.h"
#include "export/ExportFormat.h"
#include "recipe/Recipe.h"
#include "tokenize/TokenizerLoader.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs {

class RankGroup; // dist/RankGroup.h

// One run over a recipe, as the CLI's commands and the GUI's jobs ask for it: the only request
// type of the run layer (core/run/Run.h). Torch-free, so the GUI and its views hold it. What the
// run computes is any combination of the flags below; the recipe says everything else
// (schemes, algorithms, calibration and evaluation data).
struct RunRequest {
    std::string modelDir;
    Recipe recipe;
    std::string device = "cpu";    // parseComputeOptions: cpu, cuda, cuda:N
    std::string dtype = "float32"; // float32, bfloat16, float16
    TokenizerBackend tokenizer = TokenizerBackend::Auto;

    // Per-layer report on the recipe's calibration data (weight and output error, activation
    // statistics, the algorithms' gains).
    bool analyze = false;
    // Perplexity of the fake-quantized model on recipe.evaluation.
    bool evaluate = false;
    // With evaluate and a recipe that quantizes something: the fidelity report against the
    // full-precision model on the same windows (KL, Δp, top-1 agreement; eval/FidelityReport.h),
    // whose side is cached (run/FullPrecisionReference.h). Its perplexity fills fullPrecision.
    bool fidelity = true;
    // Perplexity of the full-precision model on the same windows, beside the quantized one
    // (the GUI's Evaluate); a run of its own through the same pipeline.
    bool evaluateFullPrecision = false;
    // Per-layer sensitivity of the perplexity on recipe.evaluation (run/SensitivityRun.h),
    // after the analysis when both are asked.
    bool sensitivity = false;

    std::string outDir; // write the export(s) here (empty: none)
    // Export formats (export/ExportFormat.h names or aliases). Empty: the recipe's
    // export_targets, else "fake". Given, they replace the recipe's export_targets. With
    // several formats each goes to outDir/<format>.
    std::vector<std::string> exportFormats;
    // The formats' own options by name, checked by each format against what it
    // declares (export/ExportFormat.h).
    ExportOptions exportOptions;
    // Write layouts the format holds but its consumers cannot load (as Quark itself does),
    // with a warning per layer instead of a refusal.
    bool allowUnloadable = false;
    // Keep each finished block's state beside outDir (run/ResumeKey.h: "OUT.resume") and, when
    // a killed run with the same inputs left state there, continue after its last finished
    // block: the same files as an uninterrupted run. State of another run is refused, naming
    // what differs. A run that commits its export removes the state.
    bool resume = false;

    // The processes of a distributed run (dist/RankGroup.h), or none: one process. An
    // evaluation then runs each rank's shards of the windows (eval/WindowShards.h) and gathers
    // the sums, so every rank reports the same perplexity, equal at any number of ranks. The
    // calibration windows are split the same way when every rank gets a batch of them and the
    // recipe's algorithms combine across ranks (calib/CalibrationShards.h); otherwise every
    // rank calibrates on all of them. Rank 0 alone writes the exports. A fidelity report and
    // an analysed run are refused.
    std::shared_ptr<RankGroup> ranks;

    // Warnings (patterns matching no layer, fewer windows than asked) are errors, raised before
    // any block runs (--strict).
    bool strict = false;
    // Keep every block's plans in the outcome (QuantizationOutcome::plans; sensitivity reuses
    // one calibration, tests read the codes).
    bool keepPlans = false;

    // Streams each block's layer reports as the block finishes (analysed runs).
    std::function<void(int block, const std::vector<LayerReport>& layers)> onBlockReports;
    // Receives each sensitivity row as it is measured.
    std::function<void(const SensitivityRow&)> onSensitivityRow;

    // "Analyze", "Evaluate", "Quantize", "Sensitivity" or a combination ("Analyze + Sensitivity"):
    // what a progress line or a job list calls the run.
    std::string title() const;
};

// What a run gives back: the recipe as run (provenance filled in) and whatever it was asked to
// compute. Torch-free.
struct RunOutcome {
    Recipe recipe;
    std::optional<PerplexityResult> fullPrecision; // evaluateFullPrecision
    std::optional<PerplexityResult> perplexity;    // evaluate: the quantized model
    std::optional<FidelityReport> fidelity;        // evaluate + fidelity, a quantizing recipe
    std::optional<SensitivityResult> sensitivity;  // sensitivity
    AnalysisReport report;                         // layers filled when analyze was asked
    std::vector<std::string> skipped;              // unfit layers left unquantized ("skip")
    std::vector<std::string> warnings; // what the run did differently from what was asked
    std::vector<double> blockSeconds;
    std::string outDir;
    double seconds = 0.0;
    // Where the run computed, as every result and provenance record names it (LibTorch's device
    // name, the dtype's canonical name: "bf16" asked is "bfloat16" here).
    std::string device;
    std::string dtype;
};

} // namespace qs
