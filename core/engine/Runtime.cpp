#include "engine/Runtime.h"

#include "model/ForwardThreads.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>

#include <QDir>
#include <QFileInfo>
#include <QThread>

#include <link.h>
#include <malloc.h>
#include <omp.h>

#include <string>

namespace qs {

void configureThreads(int threads) {
    const int n = threads > 0 ? threads : std::max(1, QThread::idealThreadCount());
    at::set_num_threads(n);
    // Our own parallel_for regions run in the OpenMP runtime core is linked with. Debian's
    // LibTorch uses that same libgomp and the call above already set it; a LibTorch that bundles
    // its own (PyPI's) would otherwise leave our loops at one thread per core.
    omp_set_num_threads(n);
    // The BLAS keeps its own count: OpenBLAS's pthread pool starts with one thread per core
    // whatever LibTorch is told, BLIS with one. --threads means both.
    setBlasThreads(n);
    // Keep freed activations (up to 64 MiB each) in the heap for the next batch instead of
    // returning them to the kernel: glibc's default hands blocks this large back with munmap or
    // a brk trim, and every new tensor then pays page faults on first touch (a tenth of
    // stories260K's eval time, docs/performance.md). Larger blocks (big weights) are still
    // mapped and unmapped one by one.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

std::string activeBlas() {
    // Debian selects the BLAS through the libblas.so.3 alternative; the loaded object's real path
    // tells which implementation LibTorch's matmuls actually use.
    std::string found;
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) -> int {
            const std::string name = info->dlpi_name ? info->dlpi_name : "";
            if (name.find("libblas") == std::string::npos &&
                name.find("openblas") == std::string::npos && name.find("mkl") == std::string::npos)
                return 0;
            const QString real = QFileInfo(QString::fromStdString(name)).canonicalFilePath();
            *static_cast<std::string*>(data) = real.toStdString();
            return 1;
        },
        &found);
    if (found.empty())
        return "none loaded";
    if (found.find("openblas") != std::string::npos)
        return found.find("pthread") != std::string::npos  ? "openblas-pthread"
               : found.find("openmp") != std::string::npos ? "openblas-openmp"
                                                           : "openblas";
    if (found.find("mkl") != std::string::npos)
        return "mkl";
    if (found.find("blas/libblas") != std::string::npos)
        return "netlib reference (slow: install libopenblas0-openmp)";
    return found;
}

std::string runtimeSummary() {
    return "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." +
           std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH) +
           ", BLAS " + activeBlas() + ", " + std::to_string(at::get_num_threads()) +
           " threads, CUDA " + (at::hasCUDA() ? "yes" : "no");
}

} // namespace qs
