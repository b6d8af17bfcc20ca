#include "eval/Perplexity.h"
#include "eval/WindowShards.h"

#include "model/ForwardThreads.h"
#include "recipe/RecipeLimits.h"
#include "util/Error.h"
#include "util/HostTensor.h"
#include "util/VectorExp.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace qs {

namespace {

using namespace vec;

// -log softmax(row)[target] of each row of `logits` [rows, V] (float32, contiguous) into `nll`:
// logsumexp(row) - row[target], the log-sum-exp taken about the row's maximum. One read of the
// logits: they are not written back as log-probabilities.
QS_VEC_MULTIVERSION void rowNll(const float* logits, const int64_t* targets, int64_t begin,
                                int64_t end, int64_t V, double* nll) {
    for (int64_t r = begin; r < end; ++r) {
        const float* x = logits + r * V;
        float m = -std::numeric_limits<float>::infinity();
        int64_t j = 0;
#if QS_HAVE_VECTOR_EXP
        Floats8 vm = splat8(m);
        for (; j + 8 <= V; j += 8) {
            const Floats8 v = load8(x + j);
            vm = v > vm ? v : vm;
        }
        for (int k = 0; k < 8; ++k)
            m = std::max(m, vm[k]);
#endif
        for (; j < V; ++j)
            m = std::max(m, x[j]);
        // Partial sums of at most 64 terms in float lanes, added up in double.
        double sum = 0.0;
        j = 0;
#if QS_HAVE_VECTOR_EXP
        while (j + 8 <= V) {
            Floats8 acc{};
            for (int64_t stop = std::min(V, j + 64); j + 8 <= stop; j += 8)
                acc += expNonPositive(load8(x + j) - m);
            for (int k = 0; k < 8; ++k)
                sum += double(acc[k]);
        }
#endif
        for (; j < V; ++j)
            sum += double(expNonPositive(x[j] - m));
        nll[r] = (double(m) + std::log(sum)) - double(x[targets[r]]);
    }
}

} // namespace

double sumWindowNll(DecoderModel& model, const at::Tensor& hidden, const at::Tensor& ids,
                    int64_t maxBatchTokens, const std::function<bool(int64_t, int64_t)>& progress,
                    const LogitsObserver& onLogits, std::vector<double>* batchSums) {
    const int64_t W = ids.size(0), T = ids.size(1);
    if (T < limits::kMinWindowTokens) // recipes cannot ask for less (RecipeLimits.h)
        throw Error("evaluation", "seq_len", "must be at least 2");
    const int64_t batch = windowsPerBatch(maxBatchTokens, T);
    std::vector<double> sums;
    std::vector<at::Tensor> deviceSums; // on an accelerator the sums stay there until the end
    for (int64_t b = 0; b < W; b += batch) {
        if (progress && !progress(b, W))
            throw Cancelled();
        const int64_t n = std::min(batch, W - b);
        const SmallForwardGuard threads(n * T, hidden.size(-1));
        // Position T - 1 predicts nothing inside the window: no logits for it.
        const at::Tensor logits =
            model.logits(hidden.narrow(0, b, n).narrow(1, 0, T - 1)); // [n, T-1, V] float32
        const at::Tensor target = ids.narrow(0, b, n).narrow(1, 1, T - 1);
        if (logits.is_cpu()) {
            const at::Tensor flat = logits.reshape({n * (T - 1), logits.size(-1)}).contiguous();
            const at::Tensor targets = target.reshape({-1}).to(at::kLong).contiguous();
            std::vector<double> nll(size_t(flat.size(0)));
            const float* x = flat.data_ptr<float>();
            const int64_t* t = targets.data_ptr<int64_t>();
            const int64_t V = flat.size(1);
            for (int64_t r = 0; r < flat.size(0); ++r)
                if (t[r] < 0 || t[r] >= V)
                    throw Error("evaluation", "ids",
                                "token id " + std::to_string(t[r]) + " outside the vocabulary");
            at::parallel_for(0, flat.size(0), 16, [&](int64_t begin, int64_t end) {
                rowNll(x, t, begin, end, V, nll.data());
            });
            // Summed in order, so the total does not depend on the thread count.
            double batchTotal = 0.0;
            for (const double v : nll)
                batchTotal += v;
            sums.push_back(batchTotal);
        } else {
            const at::Tensor logp = at::log_softmax(logits, -1);
            deviceSums.push_back(-logp.gather(-1, target.unsqueeze(-1)).to(at::kDouble).sum());
        }
        if (onLogits)
            onLogits(b, logits);
    }
    if (progress)
        progress(W, W);
    if (!deviceSums.empty()) {
        const at::Tensor host = at::stack(deviceSums).to(at::kCPU).contiguous();
        sums.assign(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
    }
    double total = 0.0;
    for (const double s : sums)
        total += s;
    if (batchSums)
        *batchSums = std::move(sums);
    return total;
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
