#pragma once

#include "eval/PerplexityResult.h"
#include "model/ModelLoader.h"

#include <functional>
#include <vector>

namespace qs {

struct PerplexityOptions {
    int64_t seqLen = 512;
    int64_t maxWindows = 0;                      // 0: all windows
    int64_t maxBatchElements = int64_t(1) << 26; // windows per batch × seqLen × vocab bound
};

// The protocol of docs/evaluation.md on already tokenized ids (BOS included by the caller):
// non-overlapping windows of seqLen, remainder dropped, NLL of tokens 1..L-1 of each window,
// accumulated in double. `progress(windowsDone, windowsTotal)` returning false throws
// qs::Cancelled between batches.
PerplexityResult evaluatePerplexity(ModelRunner& runner, const std::vector<int32_t>& ids,
                                    const PerplexityOptions& options,
                                    const std::function<bool(int64_t, int64_t)>& progress = {});

// Greedy decoding without sampling; stops at `eosId` (when >= 0) or after maxNewTokens. The whole
// prefix is recomputed per step (no KV cache): fine for the short continuations it serves.
std::vector<int32_t> generateGreedy(ModelRunner& runner, std::vector<int32_t> ids,
                                    int64_t maxNewTokens, int64_t eosId,
                                    const std::function<bool(int32_t)>& onToken = {});

} // namespace qs
