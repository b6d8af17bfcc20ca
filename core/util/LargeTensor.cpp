#include "util/LargeTensor.h"

#include <ATen/ATen.h>

#include <cstdint>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace qs {

at::Tensor emptyLargeCpu(const std::vector<int64_t>& sizes, at::ScalarType dtype) {
    at::Tensor t = at::empty(sizes, at::TensorOptions(dtype).device(at::kCPU));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
    const uintptr_t end = begin + t.nbytes();
    const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t last = end & ~(kHuge - 1);
    // Advice only: a kernel without THP refuses it and the pages stay small.
    if (last > first)
        madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
    return t;
}

void releaseFreedHeapMemory(size_t minFreeBytes) {
#if defined(__GLIBC__)
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
    if (minFreeBytes > 0 && mallinfo2().fordblks < minFreeBytes)
        return;
#endif
    malloc_trim(0);
#else
    (void)minFreeBytes;
#endif
}

} // namespace qs
