#pragma once

#include "model/ModuleNode.h"

#include <cstdint>
#include <vector>

namespace qs {

// The work of a run's parts in one unit, multiply-adds of the linears over the tokens each part
// runs, read from the headers before anything is computed. Progress is reported by it rather
// than by steps counted alike: a sensitivity row of block 0 runs every block and the head, one of
// the last block one block and the head, the calibration several times an evaluation's tokens,
// and an analysis pass more than a calibration. The fraction then grows about evenly in time and
// the ETA extrapolated from it holds (issue 28: counting steps alike, Sensitivity's ETA swung
// from 53 s to 66 s, and `analyze --sensitivity` gave the study, 4.5 times longer, half the bar).
class StudyWork {
public:
    StudyWork(const ModuleNode& tree, int blocks);

    // One pass of every block over `tokens` (float and sequential calibration alike carry one
    // stream through the blocks).
    double calibration(int64_t tokens) const;
    // An analysed calibration over `tokens`: the full-precision and the quantized stream, and
    // each quantized layer's output once more on the full-precision input (its local error).
    double analysis(int64_t tokens) const;
    // One evaluation of `tokens` from block `b` on, the head included.
    double evaluation(int64_t tokens, int b) const;
    // The blocks' share of evaluation(tokens, b) (the rest is the head's).
    double blocksShare(int b) const;

private:
    double fromBlock(int b) const;

    std::vector<double> m_blockMacs;
    double m_headMacs = 0;
};

} // namespace qs
