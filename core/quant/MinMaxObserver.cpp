#include "quant/MinMaxObserver.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs::quant {

MinMaxObserver::MinMaxObserver(QuantSpec spec) : Observer(std::move(spec)) {}

namespace {

at::Tensor combine(const at::Tensor& old, const at::Tensor& now, bool takeMax) {
    if (!old.defined())
        return now;
    if (old.sizes() != now.sizes())
        throw Error("observer", "qscheme",
                    "static observer saw tensors with different parameter shapes");
    const at::Tensor prev = old.to(now.scalar_type());
    return takeMax ? at::maximum(prev, now) : at::minimum(prev, now);
}

} // namespace

bool MinMaxObserver::keepsLatestOnly() const {
    const Kernel k = traits(m_spec.dtype).kernel;
    return k == Kernel::Cast || k == Kernel::Mx6 || k == Kernel::Bfp16;
}

void MinMaxObserver::doObserve(const at::Tensor& x) {
    Range r = observeRange(x, m_spec);
    if (keepsLatestOnly()) {
        m_range = r;
        return;
    }
    // NVFP4's tensor scale comes from a static FP8 observer over the group maxima even when the
    // groups themselves are dynamic (Quark FP4Block16ScaleE4M3Scheme), so it always accumulates.
    at::Tensor global = r.globalAmax.defined() && m_range.globalAmax.defined()
                            ? at::maximum(m_range.globalAmax, r.globalAmax)
                            : r.globalAmax;
    if (m_spec.isDynamic) {
        m_range = r;
    } else {
        m_range.min = r.min.defined() ? combine(m_range.min, r.min, false) : at::Tensor();
        m_range.max = combine(m_range.max, r.max, true);
        m_range.inputDtype = r.inputDtype;
    }
    m_range.globalAmax = global;
}

QuantParams MinMaxObserver::doParams() const {
    return computeParams(m_spec, m_range);
}

void MinMaxObserver::doReset() {
    m_range = Range{};
}

} // namespace qs::quant
