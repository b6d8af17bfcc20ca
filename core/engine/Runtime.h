#pragma once

#include <string>

namespace qs {

// Sets LibTorch's intra-op thread count; <= 0 means one per core. Debian's LibTorch starts with a
// single thread here (docs/pitfalls.md), so every entry point calls this once.
void configureThreads(int threads);
// "LibTorch 1.13.0, BLAS openblas-openmp, 2 threads, CUDA no": for --version and About boxes.
std::string runtimeSummary();
// The BLAS library actually loaded in this process (resolved symlinks), e.g. "openblas-openmp".
std::string activeBlas();

} // namespace qs
