#pragma once

#include "calib/CalibrationPasses.h"
#include "eval/PerplexityResult.h"
#include "run/PreparedRun.h"
#include "run/RunRequest.h"

#include <ATen/core/Tensor.h>
#include <QString>

#include <string>

namespace qs {

// The full-precision side of a fidelity comparison (docs/fidelity.md): the
// unquantized model's last-block outputs over a run's evaluation windows, and its perplexity on
// them, from the same pipeline as every perplexity (a recipe without schemes). Computed once per
// model (headers hash), evaluation ids, device, dtype and engine version, and kept in a cache
// folder (fidelityCacheDir()), so comparing several recipes on one model computes it once. Its
// hidden states are read back a batch of windows at a time, never held whole when cached.
class FullPrecisionReference {
public:
    // Read from the cache, or computed (and cached when `writesCache`) for `prepared`'s
    // evaluation windows. A distributed run's ranks other than 0 do not write: each computes
    // what it cannot read (the cached file appears whole, by rename, or not at all).
    static FullPrecisionReference obtain(const RunRequest& request, const PreparedRun& prepared,
                                         const PipelineProgress& progress = {},
                                         bool writesCache = true);

    const PerplexityResult& perplexity() const { return m_perplexity; }
    bool fromCache() const { return m_fromCache; }
    // The last block's outputs of windows [first, first + count), on `device`.
    at::Tensor windows(int64_t first, int64_t count, const at::Device& device) const;

private:
    // Takes the cached entry (`bin`: the tensor's bytes, `meta`: its JSON) when it is whole and
    // holds `dtype`; false otherwise.
    bool readCached(const QString& bin, const QString& meta, at::ScalarType dtype);

    PerplexityResult m_perplexity;
    bool m_fromCache = false;
    at::Tensor m_hidden; // when not cached (cache off or not writable)
    std::string m_file;  // the cached tensor's raw bytes, else empty
    int64_t m_windows = 0, m_seqLen = 0, m_width = 0;
    at::ScalarType m_dtype = at::kFloat;
};

// Where the references are kept: $QS_CACHE_DIR/fp-reference, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/quantscope/fp-reference. QS_CACHE_DIR=off keeps them in memory
// for one run only. Files can be deleted at any time.
std::string fidelityCacheDir();

} // namespace qs
