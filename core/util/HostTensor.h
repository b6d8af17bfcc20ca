// The one way core reads tensor memory on the host. A tensor may live on a GPU; reading its
// data_ptr() there crashes and item() syncs once per call. These helpers bring the (small)
// result to the host first, in one transfer, and are the only host reads outside CPU kernels
// that check the device themselves (a grep for data_ptr/item in core finds these and those).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace qs {

// A contiguous CPU copy of `t` (no copy when it is one already).
inline at::Tensor toHost(const at::Tensor& t) {
    return t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
}

// The elements of `t` as a vector of T (converted to T's dtype on the tensor's device first).
template <typename T> std::vector<T> hostVector(const at::Tensor& t);

template <> inline std::vector<double> hostVector<double>(const at::Tensor& t) {
    const at::Tensor h = toHost(t.to(at::kDouble));
    return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}
template <> inline std::vector<float> hostVector<float>(const at::Tensor& t) {
    const at::Tensor h = toHost(t.to(at::kFloat));
    return std::vector<float>(h.data_ptr<float>(), h.data_ptr<float>() + h.numel());
}
template <> inline std::vector<int64_t> hostVector<int64_t>(const at::Tensor& t) {
    const at::Tensor h = toHost(t.to(at::kLong));
    return std::vector<int64_t>(h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel());
}

// A one-element tensor's value as a double.
inline double hostScalar(const at::Tensor& t) {
    return hostVector<double>(t.reshape({1})).at(0);
}

} // namespace qs
