#pragma once

#include "eval/PerplexityResult.h"
#include "model/ModelLoader.h"

#include <functional>
#include <vector>

namespace qs {

// The scoring half of the protocol of docs/evaluation.md, the one definition every perplexity
// comes from (fp32 and quantized alike): the final norm and LM head over `hidden` ([W, L, H],
// the last block's outputs for windows `ids` [W, L]) in batches of about maxBatchTokens, and
// the sum over windows of -log p(token t | tokens < t) for t = 1..L-1, accumulated in double.
// `progress(windowsDone, windowsTotal)` returning false throws qs::Cancelled between batches.
// `onLogits`, when given, sees each batch's logits once scored (what the fidelity comparison
// reads instead of running the LM head again).
using LogitsObserver = std::function<void(int64_t firstWindow, const at::Tensor& logits)>;
// The total is the sum, in batch order, of each batch's own sum (its rows in order, float64):
// `batchSums`, when given, receives those. A run split over ranks by whole batches
// (eval/WindowShards.h) adds the same numbers in the same order whatever the number of ranks.
double sumWindowNll(DecoderModel& model, const at::Tensor& hidden, const at::Tensor& ids,
                    int64_t maxBatchTokens,
                    const std::function<bool(int64_t, int64_t)>& progress = {},
                    const LogitsObserver& onLogits = {}, std::vector<double>* batchSums = nullptr);

// Greedy decoding without sampling; stops at `eosId` (when >= 0) or after maxNewTokens. The whole
// prefix is recomputed per step (no KV cache): fine for the short continuations it serves.
std::vector<int32_t> generateGreedy(ModelRunner& runner, std::vector<int32_t> ids,
                                    int64_t maxNewTokens, int64_t eosId,
                                    const std::function<bool(int32_t)>& onToken = {});

} // namespace qs
