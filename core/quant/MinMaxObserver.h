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
    // Whether later calls replace the range instead of widening it (casts, MX6, BFP16: the
    // latest call's range is the one used), so ranges from elsewhere cannot be merged into it.
    bool keepsLatestOnly() const;
    // Replaces what was accumulated (a distributed run puts the ranks' combined range here);
    // the tensors keep the shapes and dtypes range() had.
    void setRange(Range range) { m_range = std::move(range); }

protected:
    void doObserve(const at::Tensor& x) override;
    QuantParams doParams() const override;
    void doReset() override;

private:
    Range m_range;
};

} // namespace qs::quant
