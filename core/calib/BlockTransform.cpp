#include "calib/BlockTransform.h"

#include <ATen/ATen.h>

namespace qs {

void BlockTransform::rangesBefore(const BlockTransformInput& /*input*/, const LinearLayer& layer,
                                  const std::vector<at::Tensor>& captured, at::Tensor& inputAbsmax,
                                  at::Tensor& weightAbsmax) const {
    inputAbsmax = at::Tensor();
    for (const at::Tensor& b : captured) {
        const at::Tensor m = b.abs().reshape({-1, b.size(-1)}).amax(0);
        inputAbsmax = inputAbsmax.defined() ? at::maximum(inputAbsmax, m) : m;
    }
    weightAbsmax = layer.weight.abs().amax(0);
}

} // namespace qs
