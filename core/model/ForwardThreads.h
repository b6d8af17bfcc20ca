#pragma once

#include <cstdint>

namespace qs {

// Thread counts of the pools a CPU forward uses: LibTorch's OpenMP team (elementwise ops, the
// attention loop, the NLL) and the BLAS library's. OpenBLAS's OpenMP build (the one
// packaging/install-deps.sh selects) runs its matmuls in that same team; its pthread build keeps
// a second pool of its own, BLIS starts single-threaded. Both are looked up at run time, so a
// LibTorch without OpenMP or a BLAS without the call simply keeps its own setting.

// Sets the BLAS library's thread count (OpenBLAS, BLIS); returns false when none is found.
bool setBlasThreads(int threads);
// The BLAS library's thread count, 0 when unknown.
int blasThreads();

// Whether the BLAS runs its matmuls in a thread pool of its own (OpenBLAS's pthread variant)
// with more than one thread.
bool blasHasOwnPool();

// While alive, LibTorch's OpenMP team on the calling thread has one thread when the forward's
// steps are too small to share: fewer than about 67 million multiply-adds in a width x width
// linear over the step's tokens (tokens x width², the size of the block's smallest matmuls; a
// parallel region then costs more than it saves, and its idle workers spin against the threads
// that work: stories260K's 2048-token batches at width 64 are 8.4 million; measured in
// docs/performance.md). Counting elements (tokens x width) instead ran the 100M synthetic's
// two-window sensitivity rows (512 tokens at width 768, 302 million) on one core. Also one
// thread when the BLAS runs its matmuls in a pool of its own, which are most of a larger model's
// time: two pools of n threads on n cores spin against each other. A pthread BLAS pool keeps
// its own count; the OpenMP build follows the team.
class SmallForwardGuard {
public:
    // `tokens` of `width` channels each step; besideOwnBlasPool = false: only the small-step
    // rule (a scope whose own work is not mostly matmuls, e.g. a calibration pass's hooks around
    // the block forwards).
    SmallForwardGuard(int64_t tokens, int64_t width, bool besideOwnBlasPool = true);
    ~SmallForwardGuard();
    SmallForwardGuard(const SmallForwardGuard&) = delete;
    SmallForwardGuard& operator=(const SmallForwardGuard&) = delete;

    // Steps of fewer multiply-adds (tokens x width²) run on one thread.
    static constexpr int64_t kMinParallelMultiplyAdds = int64_t(1) << 26;

private:
    int m_ompThreads = 0; // restored on destruction when > 0
};

} // namespace qs
