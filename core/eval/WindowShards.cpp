#include "eval/WindowShards.h"

#include <algorithm>

namespace qs {

int64_t windowsPerBatch(int64_t maxBatchTokens, int64_t seqLen) {
    return std::max<int64_t>(1, maxBatchTokens / std::max<int64_t>(1, seqLen));
}

WindowShards::WindowShards(int64_t windows, int64_t batch)
    : m_windows(std::max<int64_t>(0, windows)), m_batch(std::max<int64_t>(1, batch)) {}

int64_t WindowShards::count() const {
    return (m_windows + m_batch - 1) / m_batch;
}

std::vector<int64_t> WindowShards::shardsOf(int rank, int ranks) const {
    std::vector<int64_t> out;
    for (int64_t s = rank; s < count(); s += std::max(1, ranks))
        out.push_back(s);
    return out;
}

std::vector<int64_t> WindowShards::windowsOf(int rank, int ranks) const {
    std::vector<int64_t> out;
    for (const int64_t s : shardsOf(rank, ranks))
        for (int64_t w = s * m_batch; w < std::min(m_windows, (s + 1) * m_batch); ++w)
            out.push_back(w);
    return out;
}

} // namespace qs
