#include "model/ForwardThreads.h"

#include <dlfcn.h>

namespace qs {

namespace {

template <typename Fn> Fn lookup(const char* name) {
    // RTLD_DEFAULT: the libraries LibTorch itself loaded (libgomp, libblas.so.3 / libopenblas).
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

struct Calls {
    void (*ompSet)(int) = lookup<void (*)(int)>("omp_set_num_threads");
    int (*ompGet)() = lookup<int (*)()>("omp_get_max_threads");
    void (*openblasSet)(int) = lookup<void (*)(int)>("openblas_set_num_threads");
    int (*openblasGet)() = lookup<int (*)()>("openblas_get_num_threads");
    void (*blisSet)(long) = lookup<void (*)(long)>("bli_thread_set_num_threads");
    long (*blisGet)() = lookup<long (*)()>("bli_thread_get_num_threads");
    // 0 sequential, 1 its own pthread pool, 2 OpenMP (the same team as LibTorch's)
    int (*openblasParallel)() = lookup<int (*)()>("openblas_get_parallel");
};

const Calls& calls() {
    static const Calls c;
    return c;
}

} // namespace

bool setBlasThreads(int threads) {
    const Calls& c = calls();
    bool found = false;
    if (c.openblasSet) {
        c.openblasSet(threads);
        found = true;
    }
    if (c.blisSet) {
        c.blisSet(threads);
        found = true;
    }
    return found;
}

int blasThreads() {
    const Calls& c = calls();
    if (c.blisGet && !c.openblasGet)
        return int(c.blisGet());
    return c.openblasGet ? c.openblasGet() : 0;
}

bool blasHasOwnPool() {
    const Calls& c = calls();
    return c.openblasParallel && c.openblasParallel() == 1 && blasThreads() > 1;
}

SmallForwardGuard::SmallForwardGuard(int64_t tokens, int64_t width, bool besideOwnBlasPool) {
    const bool small = tokens * width * width < kMinParallelMultiplyAdds;
    const Calls& c = calls();
    // LibTorch's team goes down to one thread for small steps, and whenever the BLAS works in a
    // pool of its own: the matmuls then keep every core, and no idle team spins beside them.
    if ((small || (besideOwnBlasPool && blasHasOwnPool())) && c.ompSet && c.ompGet &&
        c.ompGet() > 1) {
        m_ompThreads = c.ompGet();
        c.ompSet(1); // this thread's OpenMP teams only
    }
    // A BLAS pool of its own keeps its count even for small steps (OpenBLAS's OpenMP build reads
    // the team's count at every call and follows it): one thread partitions a small product
    // differently, which moves its last bits, and tst_decodermodel's comparison with the
    // reference was measured within a few percent of its 1e-5 estimate on the pthread build.
}

SmallForwardGuard::~SmallForwardGuard() {
    if (m_ompThreads > 0)
        calls().ompSet(m_ompThreads);
}

} // namespace qs
