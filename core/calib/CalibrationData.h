#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace qs {

// Calibration samples from a tokenized text: non-overlapping windows of seqLen tokens; when there
// are more than numSamples, a seeded choice of numSamples of them, kept in text order (the same
// seed always picks the same windows). Returns int64 [N, seqLen]; throws qs::Error when the text
// has no full window.
at::Tensor calibrationSamples(const std::vector<int32_t>& ids, int64_t numSamples, int64_t seqLen,
                              uint64_t seed, const std::string& source);

// The evaluation protocol's windows: the first maxWindows (0: all) non-overlapping windows.
at::Tensor evaluationWindows(const std::vector<int32_t>& ids, int64_t seqLen, int64_t maxWindows,
                             const std::string& source);

} // namespace qs
