// The calibration windows of a run spread over ranks, and how what each rank saw of them is
// combined so that every world size gives the same bits.
//
// The windows are cut like the evaluation's (eval/WindowShards.h): shard s is calibration batch
// s of the single-process run and goes to rank s mod N. Each rank runs its shards through every
// block, so each batch is computed with the shapes (and bits) one process computes it with.
// What the passes keep of the batches is then combined:
// - static min/max observers: element-wise min and max over the ranks (exact in any order);
// - sums over batches (GPTQ's Hessians): every shard's partial sum, added in shard order as one
//   process adds its batches (sumInShardOrder), so the result is the same double at any N and
//   equal to the single-process one.
// Observers that keep a histogram (percentile, MSE) and the transforms that search over the
// calibration batches (AWQ, SmoothQuant) are not combined yet: a run that needs them calibrates
// on every window in every rank instead (QuantizationRun) or is refused.
#pragma once

#include "calib/LayerPlan.h"
#include "recipe/Recipe.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace qs {

class RankGroup;

struct CalibrationShards {
    RankGroup* group = nullptr;
    int64_t count = 0;         // shards in all
    std::vector<int64_t> mine; // this rank's, in order (shard s is on rank s mod group->size())
};

// The sum over every shard of the run of a per-shard tensor: `mine[i]` belongs to shard
// shards.mine[i] (same shape and dtype on every rank). The partials travel in rounds of one
// shard per rank (an all-gather through the CPU) and are added in shard order, the first taken
// as it is; every rank gets the result, on the device of its partials. Throws qs::Error naming
// `what` when this rank holds a different number of partials than shards.
at::Tensor sumInShardOrder(const CalibrationShards& shards, const std::vector<at::Tensor>& mine,
                           const std::string& what);

// Every shard's values on every rank, in shard order: `mine[i]` belongs to shard shards.mine[i]
// and may have any length. The same transport as sumInShardOrder's (rounds of one shard per
// rank), for what is combined in shard order but is no plain sum (a distributed analysis'
// accumulators: calib/LayerAnalyzer.h; the fidelity samples of evaluation shards, where a rank
// may hold none). Throws qs::Error naming `what` when this rank holds a different number of
// values than shards.
std::vector<std::vector<double>> gatherInShardOrder(const CalibrationShards& shards,
                                                    const std::vector<std::vector<double>>& mine,
                                                    const std::string& what);

// Rank `root`'s `tensors` on every rank (as root has them: shapes, dtypes, undefined ones; the
// others' argument is ignored), on the CPU. Exact for floating types up to float64 and integers
// below 2^53, which travel as doubles. What a rank computed alone (a GPTQ solve) reaches the
// others this way.
std::vector<at::Tensor> broadcastFrom(const CalibrationShards& shards, int root,
                                      const std::vector<at::Tensor>& tensors);

// The number of rows (tokens) over every shard, given this rank's.
int64_t sumOverRanks(const CalibrationShards& shards, int64_t mine);

// Whether every static activation spec of `recipe` (global, overrides, KV cache) has an
// observer mergeObservers can merge: the run splits its calibration only then.
bool observersMerge(const Recipe& recipe);

// Merges every static observer of `plans` (not yet frozen) with the same observer on the other
// ranks: min and max ranges element-wise. Throws qs::Error naming the layer for an observer
// whose state cannot be merged exactly (percentile, MSE, or one that keeps its latest call).
void mergeObservers(const CalibrationShards& shards, std::vector<LayerPlan>& plans);

} // namespace qs
