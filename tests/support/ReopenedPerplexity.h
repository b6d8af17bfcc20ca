// An export reopened computes what the run's in-memory model computed: the perplexity of the
// export folder `out` on the run's evaluation windows against the run's own. Both evaluations go
// through the same forward on the same windows with the same weights; 1e-6 relative allows for
// the two batching the windows differently. Shared by the export suites (QVERIFY2 inside: call
// it from a test slot).
#pragma once

#include "run/QuantizationRun.h"

#include <QString>
#include <QtTest>

#include <cmath>

namespace qs::test {

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
