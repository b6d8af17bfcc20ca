// The stories260K runs of the algorithm suites, in one place: the shared model, the calibration
// and evaluation files and the windows a test can afford (scripts/results.sh measures all 15
// calibration windows of 256 tokens).
#pragma once

#include "TestSupport.h"

#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "run/QuantizationRun.h"

#include <QtTest>

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

// What an algorithm's stories260K perplexity lies between, measured on the same evaluation
// windows: full precision below (every linear but the excluded ones holds 4-bit weights, which
// cannot be free: a run at or below full precision left its weights unquantized) and rounding
// to nearest with the same scheme and exclusions above (what the algorithm exists to beat).
struct StoriesBounds {
    double fullPrecision;
    double roundToNearest;
};

inline StoriesBounds storiesBounds(RunRequest req) {
    EvalRequest fp;
    fp.evaluation = req.recipe.evaluation;
    const double full = evaluateModelOnText(req.modelDir, fp).perplexity;
    req.recipe.algorithms.clear();
    req.evaluate = true;
    return {full, runQuantization(req, {}).perplexity->perplexity};
}

// Runs `req` twice: the algorithm's perplexity must lie between full precision and rounding to
// nearest (StoriesBounds) and replay bit for bit. A failed check fails the calling test (check
// QTest::currentTestFailed() after).
inline void checkBetweenBoundsAndReplays(const RunRequest& req, const char* algorithm) {
    const QuantizationOutcome a = runQuantization(req, {});
    const QuantizationOutcome b = runQuantization(req, {});
    QVERIFY(a.perplexity.has_value() && b.perplexity.has_value());
    const StoriesBounds bounds = storiesBounds(req);
    qInfo("stories260K %s + %s: perplexity %.6f (round to nearest %.6f, full precision %.6f)",
          req.recipe.global ? req.recipe.global->label().c_str() : "no scheme", algorithm,
          a.perplexity->perplexity, bounds.roundToNearest, bounds.fullPrecision);
    QVERIFY(a.perplexity->perplexity == b.perplexity->perplexity);
    QVERIFY(a.perplexity->perplexity < bounds.roundToNearest);
    QVERIFY(a.perplexity->perplexity > bounds.fullPrecision);
}

} // namespace qs::test
