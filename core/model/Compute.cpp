#include "model/Compute.h"

#include "util/Error.h"

#include <ATen/Context.h>
#include <torch/csrc/api/include/torch/version.h>

namespace qs {

ComputeOptions parseComputeOptions(const std::string& device, const std::string& dtype) {
    ComputeOptions o;
    if (device == "cpu") {
        o.device = at::kCPU;
    } else if (device.rfind("cuda", 0) == 0) {
        if (!at::hasCUDA())
            throw Error("--device", "",
                        "CUDA requested but this LibTorch build has no CUDA "
                        "support or no GPU is visible; use --device cpu");
        o.device = at::Device(device);
    } else {
        throw Error("--device", "", "unknown device '" + device + "' (expected cpu or cuda)");
    }
    if (dtype == "float32" || dtype == "fp32")
        o.dtype = at::kFloat;
    else if (dtype == "bfloat16" || dtype == "bf16")
        o.dtype = at::kBFloat16;
    else if (dtype == "float16" || dtype == "fp16")
        o.dtype = at::kHalf;
    else
        throw Error("--dtype", "",
                    "unknown dtype '" + dtype +
                        "' (expected float32, bfloat16 or "
                        "float16)");
#if TORCH_VERSION_MAJOR < 2
    // LibTorch 1.13 has no CPU kernels for Half matmuls ("addmm_impl_cpu_ not implemented").
    if (o.dtype == at::kHalf && o.device.is_cpu())
        throw Error(
            "--dtype", "",
            "float16 compute needs CUDA with LibTorch " + std::to_string(TORCH_VERSION_MAJOR) +
                "." + std::to_string(TORCH_VERSION_MINOR) + "; use bfloat16 or float32 on the CPU");
#endif
    return o;
}

std::string dtypeLabel(at::ScalarType t) {
    switch (t) {
    case at::kFloat:
        return "float32";
    case at::kBFloat16:
        return "bfloat16";
    case at::kHalf:
        return "float16";
    default:
        return c10::toString(t);
    }
}

} // namespace qs
