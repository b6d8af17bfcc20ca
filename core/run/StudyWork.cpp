#include "run/StudyWork.h"

#include <algorithm>

namespace qs {

namespace {
// The analysis pass's multiply-adds per calibration token, in passes of every block: the
// full-precision and the quantized stream are one pass each, and the local error computes every
// quantized layer's output on the full-precision input once more. Measured: Analyze costs 3.0
// forwards' worth on the 100M synthetic (docs/performance.md), and with this weight the CLI's
// `analyze --sensitivity` advanced at 1.3-1.5 %/s from 10 % to 90 % on a 4-layer 512-wide model.
constexpr double AnalysisPasses = 3.0;
} // namespace

StudyWork::StudyWork(const ModuleNode& tree, int blocks) : m_blockMacs(size_t(blocks), 0.0) {
    std::vector<const ModuleNode*> leaves;
    tree.collect("linear", leaves);
    for (const ModuleNode* l : leaves)
        if (l->blockIndex >= 0 && l->blockIndex < blocks && l->shape.size() == 2)
            m_blockMacs[size_t(l->blockIndex)] += double(l->shape[0]) * double(l->shape[1]);
    leaves.clear();
    tree.collect("head", leaves);
    for (const ModuleNode* h : leaves)
        if (h->shape.size() == 2)
            m_headMacs += double(h->shape[0]) * double(h->shape[1]);
}

double StudyWork::calibration(int64_t tokens) const {
    return double(tokens) * fromBlock(0);
}

double StudyWork::analysis(int64_t tokens) const {
    return AnalysisPasses * calibration(tokens);
}

double StudyWork::evaluation(int64_t tokens, int b) const {
    return double(tokens) * (fromBlock(b) + m_headMacs);
}

double StudyWork::blocksShare(int b) const {
    const double all = fromBlock(b) + m_headMacs;
    return all > 0 ? fromBlock(b) / all : 1.0;
}

double StudyWork::fromBlock(int b) const {
    double sum = 0;
    for (size_t i = size_t(std::max(0, b)); i < m_blockMacs.size(); ++i)
        sum += m_blockMacs[i];
    return sum;
}

} // namespace qs
