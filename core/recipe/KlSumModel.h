// How the recipe search (run/SchemeSearch.h) turns the sum S of its units' KL alone into a
// predicted KL for the whole recipe: 1/KL = 1/S + lambda, i.e. KL = S / (1 + lambda S).
//
// Why: the sum is exact only while the layers' logit perturbations are small and uncorrelated.
// Measured in the search's own runs, it is not: on the 100M synthetic with planted outliers the
// recipe's KL saturates (every layer at MXFP4: summed 0.292, measured 0.159), on stories260K it
// grows faster than the sum (summed 0.132, measured 0.155). One parameter fitted on the uniform
// recipes (every unit that fits a candidate quantized by it), which the search measures next to
// the units, captures both (lambda > 0: saturation, < 0: faster growth), and because the map is
// increasing in S the solver's choice is the sum's: only the predicted figures change, which is
// what the frontier, the KL budget and "predicted against measured" read.
// Torch-free.
#pragma once

#include <string>
#include <vector>

namespace qs {

struct KlAnchor {
    std::string candidate;   // the quantizing candidate of the uniform recipe
    double klSum = 0.0;      // the sum over its units of their KL alone
    double klMeasured = 0.0; // the uniform recipe's mean KL, measured on the same windows
    double bits = 0.0;       // the uniform recipe's effective bits (reported; not fitted)
};

class KlSumModel {
public:
    // No anchors: KL = S (lambda 0).
    KlSumModel() = default;
    // Fitted on `anchors` (those with both figures positive; the others are kept for the
    // report and ignored). Each anchor alone gives lambda_a = 1/klMeasured - 1/klSum; lambda
    // is their mean weighted by klMeasured^2, the least-squares fit of the relative error of
    // KL to first order (an error in lambda moves KL by -KL^2 d lambda, relatively by
    // -KL d lambda), so a near-lossless candidate, whose lambda_a is the difference of two
    // large reciprocals, barely counts. `largestSum` is the largest S the model will be asked
    // for (the frontier's smallest point): a negative lambda is limited to -0.5 / largestSum,
    // so that KL stays finite and at most twice S there (clamped() says whether it was).
    KlSumModel(std::vector<KlAnchor> anchors, double largestSum);

    double predict(double klSum) const { return klSum / (1.0 + m_lambda * klSum); }
    double lambda() const { return m_lambda; }
    bool clamped() const { return m_clamped; }
    const std::vector<KlAnchor>& anchors() const { return m_anchors; }

private:
    std::vector<KlAnchor> m_anchors;
    double m_lambda = 0.0;
    bool m_clamped = false;
};

} // namespace qs
