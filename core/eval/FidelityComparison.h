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

// The full-precision model's logits by rows of the scored positions of the evaluation windows,
// flattened (row w (T - 1) + t: position t of window w): `rows(first, count)` is [count, V].
using BaseLogitRows = std::function<at::Tensor(int64_t first, int64_t count)>;

// Logits a comparison holds of one model at once, whatever the vocabulary, window count or
// length: it takes base rows in chunks of fidelityChunkRows(V).
constexpr int64_t kFidelityLogitBytes = int64_t(64) << 20;
int64_t fidelityChunkRows(int64_t vocab);

// Rows of `model`'s final norm and LM head over the last-block outputs `hidden` of windows of
// `seqLen` tokens.
BaseLogitRows baseLogitsFromHidden(DecoderModel& model, HiddenWindows hidden, int64_t seqLen);

// All rows of `base` computed once, in the chunks compareScoredBatch asks for (so the same bits
// as computing them on demand), for comparisons that read them many times (a sensitivity study
// compares every row's model with them). [windows (seqLen - 1), V] float32 on the CPU.
at::Tensor computeBaseLogits(const BaseLogitRows& base, int64_t windows, int64_t seqLen,
                             int64_t maxBatchTokens, int64_t vocab);

// One batch as the perplexity scored it (eval/Perplexity.h's LogitsObserver): `quantLogits`
// [n, T - 1, V] of windows [firstWindow, firstWindow + n) of `ids` [W, T], against the base
// rows of the same positions, chunk by chunk. Appends to `out`.
void compareScoredBatch(const BaseLogitRows& base, int64_t firstWindow,
                        const at::Tensor& quantLogits, const at::Tensor& ids, FidelitySamples& out);

} // namespace qs
