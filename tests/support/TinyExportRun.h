// The export suites' run on a tiny-families checkpoint, and their check that the export
// reopens to what the run computed.
#pragma once

#include "TestSupport.h"

#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"

#include <QString>
#include <QtTest>

#include <cmath>

namespace qs::test {

// `uint4_wo_32` on every linear of `dir` except `exclude`, unfit layers left in float (the tiny
// DeepSeek-V3's MLA linears of 24, 40 and 48 inputs take no groups of 32), written to `out` as
// `format` and evaluated on tinystories-eval (2 windows of 64).
inline qs::RunRequest tinyUint4Export(const std::string& dir, const QString& out,
                                      const std::string& format,
                                      const std::vector<std::string>& exclude = {}) {
    qs::QuantFlags flags;
    flags.quantScheme = "uint4_wo_32";
    flags.excludeLayers = exclude;
    qs::RunRequest req;
    req.modelDir = dir;
    req.recipe = qs::recipeFromFlags(flags);
    req.recipe.unfitPolicy = "skip";
    req.recipe.evaluation.dataPath = sharedPath("data/tinystories-eval.txt").toStdString();
    req.recipe.evaluation.seqLen = 64;
    req.recipe.evaluation.maxWindows = 2;
    req.evaluate = true;
    req.fidelity = false;
    req.outDir = out.toStdString();
    req.exportFormats = {format};
    return req;
}

// An export reopened computes what the run's in-memory model computed: the perplexity of the
// export folder `out` on the run's evaluation windows against the run's own. Both evaluations go
// through the same forward on the same windows with the same weights; 1e-6 relative allows for
// the two batching the windows differently (QVERIFY2 inside: call it from a test slot).
inline void verifyReopenedPerplexity(const QString& out, const qs::QuantizationOutcome& run) {
    QVERIFY(run.perplexity.has_value());
    qs::EvalRequest eval;
    eval.evaluation = run.recipe.evaluation;
    const qs::PerplexityResult reopened = qs::evaluateModelOnText(out.toStdString(), eval);
    QVERIFY2(std::fabs(reopened.perplexity / run.perplexity->perplexity - 1) < 1e-6,
             qPrintable(QString("reopened %1, in memory %2")
                            .arg(reopened.perplexity, 0, 'g', 12)
                            .arg(run.perplexity->perplexity, 0, 'g', 12)));
}

} // namespace qs::test
