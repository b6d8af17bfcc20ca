#include "eval/Perplexity.h"

#include "util/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace qs {

PerplexityResult evaluatePerplexity(ModelRunner& runner, const std::vector<int32_t>& ids,
                                    const PerplexityOptions& options,
                                    const std::function<bool(int64_t, int64_t)>& progress) {
    const ModelConfig& cfg = runner.model().config();
    const int64_t L = options.seqLen;
    if (L < 2)
        throw Error("--seq-len", "", "must be at least 2");
    if (cfg.maxPositions > 0 && L > cfg.maxPositions)
        throw Error("--seq-len", "",
                    std::to_string(L) + " exceeds the model's max_position_embeddings (" +
                        std::to_string(cfg.maxPositions) + ")");
    int64_t windows = int64_t(ids.size()) / L;
    if (options.maxWindows > 0)
        windows = std::min(windows, options.maxWindows);
    if (windows == 0)
        throw Error("--data", "",
                    "text has " + std::to_string(ids.size()) +
                        " tokens, fewer than one window of " + std::to_string(L));

    PerplexityResult r;
    r.tokens = int64_t(ids.size());
    r.windows = windows;
    r.seqLen = L;
    r.predicted = windows * (L - 1);
    r.device = runner.model().compute().device.str();
    r.dtype = dtypeLabel(runner.model().compute().dtype);

    const at::Tensor all = at::from_blob(const_cast<int32_t*>(ids.data()), {windows * L}, at::kInt)
                               .to(at::kLong)
                               .view({windows, L});
    const int64_t batch =
        std::max<int64_t>(1, options.maxBatchElements / std::max<int64_t>(1, L * cfg.vocabSize));
    runner.loadAll();
    double nllSum = 0.0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t w = 0; w < windows; w += batch) {
        if (progress && !progress(w, windows))
            throw Cancelled();
        const int64_t n = std::min(batch, windows - w);
        const at::Tensor input = all.narrow(0, w, n).to(runner.model().compute().device);
        const at::Tensor logits = runner.forward(input); // [n, L, V] float32
        const at::Tensor logp = at::log_softmax(logits.narrow(1, 0, L - 1), -1);
        const at::Tensor target = input.narrow(1, 1, L - 1).unsqueeze(-1);
        const at::Tensor nll = -logp.gather(-1, target).squeeze(-1);
        nllSum += nll.to(at::kDouble).sum().item<double>();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress)
        progress(windows, windows);
    r.meanNll = nllSum / double(r.predicted);
    r.perplexity = std::exp(r.meanNll);
    r.tokensPerSecond = r.seconds > 0 ? double(windows * L) / r.seconds : 0.0;
    return r;
}

std::vector<int32_t> generateGreedy(ModelRunner& runner, std::vector<int32_t> ids,
                                    int64_t maxNewTokens, int64_t eosId,
                                    const std::function<bool(int32_t)>& onToken) {
    const int64_t maxLen = runner.model().config().maxPositions;
    for (int64_t step = 0; step < maxNewTokens; ++step) {
        if (maxLen > 0 && int64_t(ids.size()) >= maxLen)
            break;
        const at::Tensor input =
            at::from_blob(ids.data(), {1, int64_t(ids.size())}, at::kInt).to(at::kLong);
        const at::Tensor logits = runner.forward(input);
        const int32_t next = int32_t(logits[0][-1].argmax().item<int64_t>());
        ids.push_back(next);
        if (onToken && !onToken(next))
            throw Cancelled();
        if (eosId >= 0 && next == eosId)
            break;
    }
    return ids;
}

} // namespace qs
