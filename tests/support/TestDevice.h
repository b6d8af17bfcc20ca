// The accelerator a device-agreement test compares with the CPU: QS_TEST_DEVICE=cuda[:N] names
// it, QS_TEST_DEVICE=cpu switches the comparison off, and unset means "CUDA when this LibTorch
// has it and sees a GPU". Header-only and Torch-aware, so only core tests include it.
#pragma once

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace qs::test {

// The device to compare with the CPU, or nullopt with the reason in `whyNot`.
inline std::optional<at::Device> acceleratorUnderTest(std::string* whyNot) {
    const char* env = std::getenv("QS_TEST_DEVICE");
    const std::string wanted = env ? env : "";
    if (wanted == "cpu") {
        *whyNot = "QS_TEST_DEVICE=cpu: device comparison switched off";
        return std::nullopt;
    }
    if (!at::hasCUDA()) {
        *whyNot = wanted.empty() ? "no CUDA in this LibTorch build or no GPU visible (set "
                                   "QS_TEST_DEVICE=cuda on a GPU machine)"
                                 : "QS_TEST_DEVICE=" + wanted + " but LibTorch sees no CUDA device";
        return std::nullopt;
    }
    return at::Device(wanted.empty() ? std::string("cuda") : wanted);
}

} // namespace qs::test
