// The stories260K runs of the algorithm suites, in one place: the shared model, the calibration
// and evaluation files and the windows a test can afford (scripts/results.sh measures all 15
// calibration windows of 256 tokens).
#pragma once

#include "TestSupport.h"

#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"

#include <string>
#include <vector>

namespace qs::test {

struct StoriesWindows {
    int calibration = 15;        // windows of the calibration file
    int calibrationLength = 256; // tokens per calibration window
    bool evaluate = false;       // perplexity on the eval file, windows of 256
};

// `scheme` on every linear except `exclude`, with `algorithms` in order.
inline RunRequest storiesRequest(const std::string& scheme, const std::vector<std::string>& exclude,
                                 const std::vector<AlgorithmSpec>& algorithms,
                                 const StoriesWindows& windows) {
    Recipe recipe;
    recipe.global = quant::resolveScheme(scheme);
    recipe.exclude = exclude;
    recipe.algorithms = algorithms;
    recipe.calibration.dataPath = sharedPath("data/tinystories-calib.txt").toStdString();
    recipe.calibration.numSamples = windows.calibration;
    recipe.calibration.seqLen = windows.calibrationLength;
    if (windows.evaluate) {
        recipe.evaluation.dataPath = sharedPath("data/tinystories-eval.txt").toStdString();
        recipe.evaluation.seqLen = 256;
    }
    RunRequest req;
    req.modelDir = sharedPath("models/stories260K").toStdString();
    req.recipe = recipe;
    req.evaluate = windows.evaluate;
    return req;
}

} // namespace qs::test
