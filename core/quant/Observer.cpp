#include "quant/Observer.h"

#include "quant/MinMaxObserver.h"
#include "quant/MseObserver.h"
#include "quant/PercentileObserver.h"
#include "util/Error.h"

namespace qs::quant {

Observer::Observer(QuantSpec spec) : m_spec(std::move(spec)) {
    m_spec.validate("observer");
}

Observer::~Observer() = default;

void Observer::observe(const at::Tensor& x) {
    if (!x.defined())
        throw Error("observer", "", "undefined tensor");
    if (x.numel() == 0)
        return;
    m_inputDtype = x.scalar_type();
    doObserve(x);
    ++m_calls;
}

QuantParams Observer::params() const {
    if (m_calls == 0)
        throw Error("observer", "", "no tensor observed yet");
    return doParams();
}

void Observer::reset() {
    doReset();
    m_calls = 0;
}

std::unique_ptr<Observer> Observer::create(const QuantSpec& spec, const ObserverOptions& options) {
    switch (spec.observer) {
    case ObserverKind::MinMax:
        return std::make_unique<MinMaxObserver>(spec);
    case ObserverKind::Percentile:
        return std::make_unique<PercentileObserver>(spec, options);
    case ObserverKind::Mse:
        return std::make_unique<MseObserver>(spec, options);
    }
    throw Error("observer", "observer_cls", "unknown observer");
}

} // namespace qs::quant
