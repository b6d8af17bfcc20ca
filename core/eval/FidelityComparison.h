#pragma once

#include "eval/FidelityReport.h"
#include "model/DecoderModel.h"

#include <functional>

namespace qs {

// One row per scored position: logits of the full-precision model (`base`) and of the quantized
// one (`quant`), both [rows, V] float32 contiguous on the CPU, and the target token of each row.
// Appends each row's KL(base || quant) over the whole vocabulary, Δp, both NLLs and whether both
// argmax tokens (the first maximal logit, as llama.cpp picks it) are the same. Accumulated in
// double; equal logits give KL 0 and Δp 0 exactly.
void compareLogitRows(const at::Tensor& base, const at::Tensor& quant, const at::Tensor& targets,
                      FidelitySamples& out);

// The last block's outputs of `count` windows from `first` on ([count, T, H]).
using HiddenWindows = std::function<at::Tensor(int64_t first, int64_t count)>;

// The fidelity samples of the evaluation windows `ids` [W, T] (positions 1..T-1 of each, the
// perplexity protocol's): each model's final norm and LM head over its own last-block outputs,
// a few hundred rows at a time, so no more than about kFidelityLogitBytes of logits per model
// exist at once whatever the vocabulary, window count or length. `progress(done, total)`
// returning false throws qs::Cancelled between batches.
FidelitySamples compareWindows(DecoderModel& baseModel, const HiddenWindows& baseHidden,
                               DecoderModel& quantModel, const HiddenWindows& quantHidden,
                               const at::Tensor& ids, int64_t maxBatchTokens,
                               const std::function<bool(int64_t, int64_t)>& progress = {});

constexpr int64_t kFidelityLogitBytes = int64_t(64) << 20;

} // namespace qs
