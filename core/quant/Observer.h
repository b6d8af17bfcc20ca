// Calibration observers: they see tensors one call at a time and turn what they saw into
// quantization parameters, as Quark's observers do (quark/torch/quantization/observer).
// Static specs accumulate over calls; dynamic specs keep only the latest call.
#pragma once

#include "quant/Quantize.h"

#include <ATen/core/Tensor.h>

#include <memory>

namespace qs::quant {

// Defaults are Quark's hard-coded values (PerTensorPercentileObserver: 4200 bins, zeros skipped,
// 99.99999999th percentile; PerTensorMSEObserver: 2048 bins, amax searched from bin 2045).
struct ObserverOptions {
    int percentileBins = 4200;
    double percentile = 99.99999999;
    bool percentileSkipZeros = true;
    int mseBins = 2048;
    int mseStartBin = 2045;
    int mseStride = 1;
};

class Observer {
public:
    virtual ~Observer();
    Observer(const Observer&) = delete;
    Observer& operator=(const Observer&) = delete;

    // Empty tensors are ignored (as in Quark). Throws qs::Error on a dtype/shape the spec cannot
    // take or when a static spec sees tensors of different parameter shapes.
    void observe(const at::Tensor& x);
    // Throws qs::Error when nothing has been observed yet.
    QuantParams params() const;
    void reset();

    bool hasObserved() const { return m_calls > 0; }
    int64_t calls() const { return m_calls; }
    const QuantSpec& spec() const { return m_spec; }

    // MinMax, Percentile or Mse per spec.observer (MX/NVFP4/MX6/BFP16/casts use MinMax).
    static std::unique_ptr<Observer> create(const QuantSpec& spec,
                                            const ObserverOptions& options = {});

protected:
    explicit Observer(QuantSpec spec);

    virtual void doObserve(const at::Tensor& x) = 0;
    virtual QuantParams doParams() const = 0;
    virtual void doReset() = 0;

    QuantSpec m_spec;
    at::ScalarType m_inputDtype = at::kFloat;

private:
    int64_t m_calls = 0;
};

} // namespace qs::quant
