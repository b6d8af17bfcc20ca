#pragma once

#include <cstdint>
#include <vector>

namespace qs {

// How many windows of `seqLen` tokens one batch of at most `maxBatchTokens` tokens holds (at
// least one): the one rule every pass that batches windows follows (block forwards, scoring,
// the algorithms' probes), so that the shards below are exactly the scored batches.
int64_t windowsPerBatch(int64_t maxBatchTokens, int64_t seqLen);

// Evaluation windows cut into shards for a run spread over ranks. A shard is one scoring batch
// of the single-process run (`batch` windows, the last one shorter), so every rank forwards and
// scores exactly the batches one process would (same shapes, same dynamic activation scales,
// same bits), and the per-batch NLL sums (sumWindowNll) add up in shard order to the same total
// at any number of ranks. Shard s goes to rank s mod ranks.
class WindowShards {
public:
    WindowShards(int64_t windows, int64_t batch);

    int64_t count() const;
    // The shards of `rank` out of `ranks`, in order.
    std::vector<int64_t> shardsOf(int rank, int ranks) const;
    // Their windows, in order: the rows of the evaluation tensor that rank runs.
    std::vector<int64_t> windowsOf(int rank, int ranks) const;

private:
    int64_t m_windows;
    int64_t m_batch;
};

} // namespace qs
