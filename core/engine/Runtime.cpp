#include "engine/Runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>

#include <QDir>
#include <QFileInfo>
#include <QThread>

#include <link.h>

#include <string>

namespace qs {

void configureThreads(int threads) {
    const int n = threads > 0 ? threads : std::max(1, QThread::idealThreadCount());
    at::set_num_threads(n);
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
        return found.find("pthread") != std::string::npos ? "openblas-pthread" : "openblas";
    if (found.find("mkl") != std::string::npos)
        return "mkl";
    if (found.find("blas/libblas") != std::string::npos)
        return "netlib reference (slow: install libopenblas0-pthread)";
    return found;
}

std::string runtimeSummary() {
    return "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." +
           std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH) +
           ", BLAS " + activeBlas() + ", " + std::to_string(at::get_num_threads()) +
           " threads, CUDA " + (at::hasCUDA() ? "yes" : "no");
}

} // namespace qs
