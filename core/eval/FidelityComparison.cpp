#include "eval/FidelityComparison.h"
#include "eval/WindowShards.h"

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

int64_t fidelityChunkRows(int64_t vocab) {
    return std::max<int64_t>(1, kFidelityLogitBytes / (std::max<int64_t>(1, vocab) * 4));
}

BaseLogitRows baseLogitsFromHidden(DecoderModel& model, HiddenWindows hidden, int64_t seqLen) {
    const int64_t scored = seqLen - 1;
    return [&model, hidden = std::move(hidden), scored](int64_t first, int64_t count) {
        const int64_t w0 = first / scored, w1 = (first + count - 1) / scored;
        const at::Tensor h = hidden(w0, w1 - w0 + 1).narrow(1, 0, scored);
        const at::Tensor rows = h.reshape({-1, h.size(-1)}).narrow(0, first - w0 * scored, count);
        return model.logits(rows.unsqueeze(0)).squeeze(0);
    };
}

namespace {

// The chunks of the base rows of one scoring batch: [begin, begin + rows) in steps of chunk.
template <typename F> void forEachChunk(int64_t begin, int64_t rows, int64_t chunk, F&& f) {
    for (int64_t r = 0; r < rows; r += chunk)
        f(begin + r, std::min(chunk, rows - r));
}

} // namespace

at::Tensor computeBaseLogits(const BaseLogitRows& base, int64_t windows, int64_t seqLen,
                             int64_t maxBatchTokens, int64_t vocab) {
    const int64_t scored = seqLen - 1;
    const int64_t batch = windowsPerBatch(maxBatchTokens, seqLen);
    at::Tensor all;
    for (int64_t w = 0; w < windows; w += batch) {
        const int64_t n = std::min(batch, windows - w);
        forEachChunk(w * scored, n * scored, fidelityChunkRows(vocab),
                     [&](int64_t first, int64_t m) {
                         const at::Tensor rows = base(first, m).to(at::kCPU, at::kFloat);
                         if (!all.defined())
                             all = at::empty({windows * scored, rows.size(1)}, at::kFloat);
                         all.narrow(0, first, m).copy_(rows);
                     });
    }
    return all;
}

void compareScoredBatch(const BaseLogitRows& base, int64_t firstWindow,
                        const at::Tensor& quantLogits, const at::Tensor& ids,
                        FidelitySamples& out) {
    const int64_t n = quantLogits.size(0), scored = quantLogits.size(1), V = quantLogits.size(2);
    const at::Tensor quant = quantLogits.reshape({n * scored, V});
    const at::Tensor targets = ids.narrow(0, firstWindow, n).narrow(1, 1, scored).reshape({-1});
    const int64_t begin = firstWindow * scored;
    forEachChunk(begin, n * scored, fidelityChunkRows(V), [&](int64_t first, int64_t m) {
        compareLogitRows(base(first, m), quant.narrow(0, first - begin, m),
                         targets.narrow(0, first - begin, m), out);
    });
}

} // namespace qs
