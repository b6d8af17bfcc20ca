#pragma once

#include "analysis/LayerReport.h"
#include "analysis/Sensitivity.h"
#include "eval/PerplexityResult.h"
#include "recipe/Recipe.h"

#include <optional>
#include <string>
#include <vector>

namespace qs {

// A recipe run as the GUI asks for it. Torch-free: views and the app hold these.
struct RunRequest {
    enum class Kind {
        Analyze,     // per-layer report on the recipe's calibration data
        Quantize,    // write a fake-quantized checkpoint + recipe to outDir
        Evaluate,    // perplexity of fp32 and of the fake-quantized model on recipe.evaluation
        Sensitivity, // per-layer alone / all-but perplexity on recipe.evaluation
    };
    Kind kind = Kind::Analyze;
    Recipe recipe;
    std::string outDir;            // Quantize only: the formats are the recipe's export_targets
    std::string ggufType = "auto"; // Quantize to GGUF only (ggufTypeNames)
    std::string device = "cpu";
    std::string dtype = "float32";
};

struct RunSummary {
    RunRequest::Kind kind = RunRequest::Kind::Analyze;
    Recipe recipe;                             // as run (provenance filled in)
    std::optional<PerplexityResult> fp;        // Evaluate
    std::optional<PerplexityResult> quantized; // Evaluate
    std::optional<SensitivityResult> sensitivity;
    std::vector<std::string> skipped;  // unfit layers left unquantized
    std::vector<std::string> warnings; // what the run did differently from what was asked
    std::vector<double> blockSeconds;
    std::string outDir;
    double seconds = 0.0;
};

} // namespace qs
