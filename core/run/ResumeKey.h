#pragma once

#include "run/PreparedRun.h"
#include "run/RunRequest.h"

#include <nlohmann/json.hpp>

#include <string>

namespace qs {

// Where a run that may resume keeps its state (calib/ResumeState.h): a folder beside the
// export, "OUT.resume/rank-R" (rank 0 for one process), so a killed run's state survives the
// staging folder's cleanup and each rank of a distributed run keeps its own shard's streams.
std::string resumeRankDir(const std::string& outDir, int rank);
std::string resumeDir(const std::string& outDir);

// What decides the bytes a run writes, one member per input, so a resume with anything else is
// refused naming it: the recipe as run (without the time it was written), the model's files
// (names, sizes, modification times), the calibration and evaluation token ids (SHA-256),
// the threads (a matmul's last bits can depend on how many split it), the world size and
// rank, the export formats and their options.
nlohmann::ordered_json resumeKey(const RunRequest& request, const PreparedRun& prepared, int rank,
                                 int worldSize);

} // namespace qs
