// Fresh CPU tensors for large outputs (quantized weights, their codes). A new 180 MB output is
// first touched page by page: with 4 KiB pages that is ~45,000 page faults, which cost several
// times the quantization arithmetic itself (bench_quant's "plan" row, `perf`: clear_page and
// the fault path). Asking for transparent huge pages (this workplace's kernels run THP in
// "madvise" mode) turns them into ~90 faults of 2 MiB.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

namespace qs {

// at::empty on the CPU, with the buffer's whole 2 MiB pages advised as huge pages when it is
// large enough to have any (Linux; elsewhere, and for small sizes, plain at::empty).
at::Tensor emptyLargeCpu(const std::vector<int64_t>& sizes, at::ScalarType dtype);

// Hands the free pages of the C heap back to the system (glibc malloc_trim; nothing elsewhere).
// Block-sized tensors are often carved out of free heap chunks rather than mmapped, and a live
// allocation above them keeps glibc from shrinking the heap, so without this the heap of a
// block-by-block run kept every block's freed pages resident: a 7B-shaped quantize grew by
// ~120 MiB a block to 3-5 GB (bench/bench_export_memory.py, /proc/PID/smaps: all in [heap]).
// Only when more than `minFreeBytes` of the heap are free (0: always): the pages handed back
// are faulted in again, zeroed, by the next block's activations, which cost a 100M model's
// eval a fifth of its speed when done after every block.
void releaseFreedHeapMemory(size_t minFreeBytes = 0);

} // namespace qs
