#include "recipe/KlSumModel.h"

#include <utility>

namespace qs {

KlSumModel::KlSumModel(std::vector<KlAnchor> anchors, double largestSum)
    : m_anchors(std::move(anchors)) {
    double weighted = 0.0, weights = 0.0;
    for (const KlAnchor& a : m_anchors) {
        if (!(a.klSum > 0.0 && a.klMeasured > 0.0))
            continue;
        const double w = a.klMeasured * a.klMeasured;
        weighted += w * (1.0 / a.klMeasured - 1.0 / a.klSum);
        weights += w;
    }
    if (weights > 0.0)
        m_lambda = weighted / weights;
    if (largestSum > 0.0 && m_lambda < -0.5 / largestSum) {
        m_lambda = -0.5 / largestSum;
        m_clamped = true;
    }
}

} // namespace qs
