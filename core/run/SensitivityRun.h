#pragma once

#include "analysis/Sensitivity.h"
#include "run/PreparedRun.h"
#include "run/QuantizationRun.h"
#include "run/StudyWork.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qs {

class RankGroup;

// Per-layer sensitivity of the perplexity (analysis/Sensitivity.h): the recipe is calibrated
// once, on the whole model, and every row reuses those plans (quantized weights and frozen
// activation quantizers) with layers switched on and off: one calibration plus one evaluation
// per measurement. With float calibration (the default) the frozen ranges equal what a
// calibration of each row's recipe would give; with sequential calibration they are the whole
// recipe's. `request.evaluate` is implied.
//
// Made in two steps so that a longer run can check it and weigh it before any work: the
// constructor prepares the request (recipe checked, data tokenized, nothing computed), finds the
// rows from the recipe's resolution on the headers and refuses a recipe that quantizes no layer
// ("nothing to measure"); run() computes. runJob makes the study before an analysis it runs
// first, so neither that refusal nor the study's own bad input waits for the analysis.
//
// In a distributed run (`request.ranks`) every rank calibrates on every window and measures the
// two references (full precision and the whole recipe: each row starts from their block
// inputs), then only its own rows: rowOwners' balanced split by each row's work (StudyWork).
// The rows are gathered to every rank in row order, each as its owner measured it, so the
// result is the one a single process gives, double for double (at equal threads per rank).
class SensitivityStudy {
public:
    explicit SensitivityStudy(const RunRequest& request, const PipelineProgress& progress = {});

    // The study's work, and that of an analysis pass over the same calibration data, in
    // StudyWork's unit: how a run that does both shares its progress out.
    double work() const { return m_work; }
    double analysisWork() const;

    // Runs the study (once); progress over it, 0..1. `onRow` (optional) receives each row as it
    // is measured.
    SensitivityResult run(const PipelineProgress& progress = {},
                          const std::function<void(const SensitivityRow&)>& onRow = {});

    // The rank that measures each row, for rows of `work` each (in row order): the next row to
    // the rank with the least work so far, the lowest rank on a tie.
    static std::vector<int> rowOwners(const std::vector<double>& work, int ranks);

private:
    PreparedRun m_prep;
    std::shared_ptr<RankGroup> m_ranks;
    StudyWork m_studyWork;
    double m_work = 0;
};

// SensitivityStudy(request).run(progress, onRow), one progress over both.
SensitivityResult runSensitivity(const RunRequest& request, const PipelineProgress& progress = {},
                                 const std::function<void(const SensitivityRow&)>& onRow = {});

} // namespace qs
