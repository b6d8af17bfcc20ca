// Running min/max (or per-block absolute max) at the spec's granularity: Quark's
// PerTensor/PerChannel/PerGroupMinMaxObserver and PerBlockMXObserver.
#pragma once

#include "quant/Observer.h"

namespace qs::quant {

class MinMaxObserver : public Observer {
public:
    explicit MinMaxObserver(QuantSpec spec);

    // What has been accumulated so far (undefined tensors before the first call).
    const Range& range() const { return m_range; }

protected:
    void doObserve(const at::Tensor& x) override;
    QuantParams doParams() const override;
    void doReset() override;

private:
    Range m_range;
};

} // namespace qs::quant
