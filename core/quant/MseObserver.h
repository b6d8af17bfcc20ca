// MSE clipping search (Quark PerTensorMSEObserver.get_min_max_by_mse): histogram the tensor,
// try each bin centre from `mseStartBin` on as the clipping maximum, fake-quantize the bin
// centres with it and keep the one with the smallest count-weighted squared error. Quark's
// grid (2048 bins from bin 2045) only tries the top three bins; widen it with ObserverOptions.
// Asymmetric specs trim the same number of bins from both ends of a [min, max] histogram.
#pragma once

#include "quant/HistogramObserver.h"

namespace qs::quant {

class MseObserver : public HistogramObserver {
public:
    MseObserver(QuantSpec spec, const ObserverOptions& options = {});

    std::pair<double, double> clipRange() const;

protected:
    QuantParams doParams() const override;

private:
    double candidateError(double lo, double hi) const;

    int m_startBin;
    int m_stride;
};

} // namespace qs::quant
