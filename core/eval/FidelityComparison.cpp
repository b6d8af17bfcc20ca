#include "eval/FidelityComparison.h"

#include "util/Error.h"
#include "util/VectorExp.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace qs {

namespace {

using namespace vec;

struct RowOutputs {
    double* kl;
    double* deltaP;
    double* nllBase;
    double* nllQuant;
    uint8_t* sameTop;
};

// exp(x[j] - m) of a row into e (float, within about 1 ulp), vectorised.
QS_VEC_MULTIVERSION void shiftedExp(const float* x, float m, int64_t V, float* e) {
    int64_t j = 0;
#if QS_HAVE_VECTOR_EXP
    const Floats8 vm = splat8(m);
    for (; j + 8 <= V; j += 8)
        store8(e + j, expNonPositive(load8(x + j) - vm));
#endif
    for (; j < V; ++j)
        e[j] = expNonPositive(x[j] - m);
}

// Index of the first maximal value (llama.cpp's strict `>` scan).
int64_t firstArgmax(const float* x, int64_t V) {
    int64_t best = 0;
    for (int64_t j = 1; j < V; ++j)
        if (x[j] > x[best])
            best = j;
    return best;
}

// With p = softmax(x) = e^(x - mx) / sp and q = softmax(y) = e^(y - my) / sq:
//   log p_j - log q_j = d_j - log(sp / sq),  d_j = (x_j - mx) - (y_j - my)
//   KL(p || q) = sum_j p_j d_j - log(sp / sq)        (sum_j p_j = 1)
// d_j is formed in double from the float logits (exact), the sums in double with four
// independent accumulators (a fixed order: the result does not depend on threads). Equal rows
// give d = 0 and sp = sq, so KL is exactly 0.
void compareRow(const float* x, const float* y, int64_t target, int64_t V, float* ex, float* ey,
                const RowOutputs& out, int64_t r) {
    const int64_t ix = firstArgmax(x, V), iy = firstArgmax(y, V);
    const float mx = x[ix], my = y[iy];
    shiftedExp(x, mx, V, ex);
    shiftedExp(y, my, V, ey);
    double sp[4] = {}, sq[4] = {}, sd[4] = {};
    int64_t j = 0;
    for (; j + 4 <= V; j += 4)
        for (int k = 0; k < 4; ++k) {
            const double d = (double(x[j + k]) - double(mx)) - (double(y[j + k]) - double(my));
            sp[k] += double(ex[j + k]);
            sq[k] += double(ey[j + k]);
            sd[k] += double(ex[j + k]) * d;
        }
    for (; j < V; ++j) {
        const double d = (double(x[j]) - double(mx)) - (double(y[j]) - double(my));
        sp[0] += double(ex[j]);
        sq[0] += double(ey[j]);
        sd[0] += double(ex[j]) * d;
    }
    const double sumP = (sp[0] + sp[1]) + (sp[2] + sp[3]);
    const double sumQ = (sq[0] + sq[1]) + (sq[2] + sq[3]);
    const double sumD = (sd[0] + sd[1]) + (sd[2] + sd[3]);
    const double logSumP = std::log(sumP), logSumQ = std::log(sumQ);
    out.kl[r] = sumD / sumP - (logSumP - logSumQ);
    out.nllBase[r] = (double(mx) + logSumP) - double(x[target]);
    out.nllQuant[r] = (double(my) + logSumQ) - double(y[target]);
    out.deltaP[r] = std::exp(-out.nllQuant[r]) - std::exp(-out.nllBase[r]);
    out.sameTop[r] = ix == iy ? 1 : 0;
}

} // namespace

void compareLogitRows(const at::Tensor& base, const at::Tensor& quant, const at::Tensor& targets,
                      FidelitySamples& out) {
    const int64_t rows = base.size(0), V = base.size(1);
    if (quant.sizes() != base.sizes() || targets.numel() != rows)
        throw Error("fidelity", "logits", "the two models' logits differ in shape");
    const at::Tensor b = base.to(at::kCPU, at::kFloat).contiguous();
    const at::Tensor q = quant.to(at::kCPU, at::kFloat).contiguous();
    const at::Tensor t = targets.to(at::kCPU, at::kLong).contiguous();
    const int64_t* tp = t.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r)
        if (tp[r] < 0 || tp[r] >= V)
            throw Error("evaluation", "ids",
                        "token id " + std::to_string(tp[r]) + " outside the vocabulary");
    const size_t at0 = out.kl.size();
    const size_t n = at0 + size_t(rows);
    out.kl.resize(n);
    out.deltaP.resize(n);
    out.nllBase.resize(n);
    out.nllQuant.resize(n);
    out.sameTop.resize(n);
    const RowOutputs o{out.kl.data() + at0, out.deltaP.data() + at0, out.nllBase.data() + at0,
                       out.nllQuant.data() + at0, out.sameTop.data() + at0};
    const float* bp = b.data_ptr<float>();
    const float* qp = q.data_ptr<float>();
    at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
        std::vector<float> ex(static_cast<size_t>(V)), ey(static_cast<size_t>(V));
        for (int64_t r = begin; r < end; ++r)
            compareRow(bp + r * V, qp + r * V, tp[r], V, ex.data(), ey.data(), o, r);
    });
}

FidelitySamples compareWindows(DecoderModel& baseModel, const HiddenWindows& baseHidden,
                               DecoderModel& quantModel, const HiddenWindows& quantHidden,
                               const at::Tensor& ids, int64_t maxBatchTokens,
                               const std::function<bool(int64_t, int64_t)>& progress) {
    const int64_t W = ids.size(0), T = ids.size(1);
    const int64_t V = baseModel.config().vocabSize;
    const int64_t batch = std::max<int64_t>(1, maxBatchTokens / T);
    // Rows whose logits of one model stay within kFidelityLogitBytes.
    const int64_t chunkRows = std::max<int64_t>(1, kFidelityLogitBytes / (V * 4));
    FidelitySamples samples;
    for (int64_t w = 0; w < W; w += batch) {
        if (progress && !progress(w, W))
            throw Cancelled();
        const int64_t n = std::min(batch, W - w);
        // Position T - 1 predicts nothing inside the window.
        auto flat = [&](const at::Tensor& h) {
            return h.narrow(1, 0, T - 1).reshape({n * (T - 1), h.size(-1)});
        };
        const at::Tensor hb = flat(baseHidden(w, n));
        const at::Tensor hq = flat(quantHidden(w, n));
        const at::Tensor targets = ids.narrow(0, w, n).narrow(1, 1, T - 1).reshape({-1});
        for (int64_t r = 0; r < hb.size(0); r += chunkRows) {
            const int64_t m = std::min(chunkRows, hb.size(0) - r);
            const at::Tensor lb = baseModel.logits(hb.narrow(0, r, m).unsqueeze(0)).squeeze(0);
            const at::Tensor lq = quantModel.logits(hq.narrow(0, r, m).unsqueeze(0)).squeeze(0);
            compareLogitRows(lb, lq, targets.narrow(0, r, m), samples);
        }
    }
    if (progress)
        progress(W, W);
    return samples;
}

} // namespace qs
