#include "eval/Perplexity.h"

#include "util/Error.h"
#include "util/HostTensor.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace qs {

double sumWindowNll(DecoderModel& model, const at::Tensor& hidden, const at::Tensor& ids,
                    int64_t maxBatchTokens, const std::function<bool(int64_t, int64_t)>& progress) {
    const int64_t W = ids.size(0), T = ids.size(1);
    if (T < 2)
        throw Error("evaluation", "seq_len", "must be at least 2");
    const int64_t batch = std::max<int64_t>(1, maxBatchTokens / T);
    at::Tensor sums = at::zeros({}, at::TensorOptions(at::kDouble).device(hidden.device()));
    for (int64_t b = 0; b < W; b += batch) {
        if (progress && !progress(b, W))
            throw Cancelled();
        const int64_t n = std::min(batch, W - b);
        const at::Tensor logits = model.logits(hidden.narrow(0, b, n)); // [n, T, V] float32
        const at::Tensor logp = at::log_softmax(logits.narrow(1, 0, T - 1), -1);
        const at::Tensor target = ids.narrow(0, b, n).narrow(1, 1, T - 1).unsqueeze(-1);
        sums -= logp.gather(-1, target).to(at::kDouble).sum();
    }
    if (progress)
        progress(W, W);
    return hostScalar(sums);
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
        const auto next = int32_t(hostScalar(logits[0][-1].argmax()));
        ids.push_back(next);
        if (onToken && !onToken(next))
            throw Cancelled();
        if (eosId >= 0 && next == eosId)
            break;
    }
    return ids;
}

} // namespace qs
