#include "calib/CalibrationData.h"

#include "recipe/RecipeLimits.h"
#include "util/Error.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace qs {

namespace {

at::Tensor windowsTensor(const std::vector<int32_t>& ids, const std::vector<int64_t>& starts,
                         int64_t seqLen) {
    at::Tensor out = at::empty({int64_t(starts.size()), seqLen}, at::kLong);
    int64_t* p = out.data_ptr<int64_t>();
    for (size_t w = 0; w < starts.size(); ++w)
        for (int64_t t = 0; t < seqLen; ++t)
            p[int64_t(w) * seqLen + t] = ids[size_t(starts[w] + t)];
    return out;
}

int64_t windowCount(const std::vector<int32_t>& ids, int64_t seqLen, const std::string& source) {
    if (seqLen < limits::kMinWindowTokens) // recipes cannot ask for less (RecipeLimits.h)
        throw Error(source, "seq_len", "must be at least 2");
    const int64_t n = int64_t(ids.size()) / seqLen;
    if (n == 0)
        throw Error(source, "seq_len",
                    "the text has " + std::to_string(ids.size()) +
                        " tokens, fewer than one window of " + std::to_string(seqLen));
    return n;
}

} // namespace

at::Tensor calibrationSamples(const std::vector<int32_t>& ids, int64_t numSamples, int64_t seqLen,
                              uint64_t seed, const std::string& source) {
    if (numSamples < 1)
        throw Error(source, "num_samples", "must be at least 1");
    const int64_t n = windowCount(ids, seqLen, source);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    if (numSamples < n) {
        // A partial Fisher-Yates with a fixed engine: portable and identical on every platform.
        std::mt19937_64 rng(seed);
        for (int64_t i = 0; i < numSamples; ++i) {
            const int64_t j = i + int64_t(rng() % uint64_t(n - i));
            std::swap(order[size_t(i)], order[size_t(j)]);
        }
        order.resize(size_t(numSamples));
        std::sort(order.begin(), order.end());
    }
    std::vector<int64_t> starts;
    for (int64_t w : order)
        starts.push_back(w * seqLen);
    return windowsTensor(ids, starts, seqLen);
}

at::Tensor evaluationWindows(const std::vector<int32_t>& ids, int64_t seqLen, int64_t maxWindows,
                             const std::string& source) {
    int64_t n = windowCount(ids, seqLen, source);
    if (maxWindows > 0)
        n = std::min(n, maxWindows);
    std::vector<int64_t> starts;
    for (int64_t w = 0; w < n; ++w)
        starts.push_back(w * seqLen);
    return windowsTensor(ids, starts, seqLen);
}

} // namespace qs
