#include "algo/GptqColumns.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace qs::algo {

namespace {

// The spec of one group's grid: per channel of an [out, g] slice, the spec's type and options.
quant::QuantSpec columnGridSpec(const quant::QuantSpec& spec) {
    quant::QuantSpec s = spec;
    s.granularity = quant::Granularity::PerChannel;
    s.chAxis = 0;
    s.groupSize = 0;
    s.isDynamic = false;
    return s;
}

GptqColumns::RowGrid rowGridOf(const quant::QuantParams& p, int64_t rows) {
    if (p.scale.device().is_cuda())
        return {};
    return {
        at::clamp_min(p.scale.to(at::kFloat).reshape({-1}).expand({rows}), FLT_MIN).contiguous(),
        p.zeroPoint.to(at::kInt).reshape({-1}).expand({rows}).contiguous()};
}

// Columns [s0, s1) of the lazy block starting at loop column i1 (W1: the block's columns, Hinv1
// and P1: the factor's and the correction's block, all contiguous): each quantized on its
// group's grid with exactly the integer kernel's arithmetic (x * (1/scale) rounded half to even,
// plus the zero point, clamped; NaN to the zero point; dequantized as (code - zp) * scale), its
// rounding error divided by Hinv1's diagonal and spread over the block's later columns, row by
// row. The same float operations in the same order as the ATen column loop of run() (no
// contraction: -ffp-contract=off), so the result is bit-identical to it.
void quantizeColumnsCpu(at::Tensor& W1, at::Tensor& Err1, const at::Tensor& Hinv1,
                        const at::Tensor& P1, at::Tensor& codes, at::Tensor& Q,
                        const std::vector<GptqColumns::RowGrid>& rowGrids,
                        const std::vector<int64_t>& order, int64_t i1, int64_t s0, int64_t s1,
                        int64_t groupSize, const quant::QuantSpec& grid) {
    const int64_t rows = W1.size(0), count = W1.size(1), cols = codes.size(1);
    const quant::TypeTraits& t = quant::traits(grid.dtype);
    const float qmin = static_cast<float>(t.qmin), qmax = static_cast<float>(t.qmax);
    float* w1 = W1.data_ptr<float>();
    float* err1 = Err1.data_ptr<float>();
    const float* h = Hinv1.data_ptr<float>();
    const float* p = P1.defined() ? P1.data_ptr<float>() : nullptr;
    int32_t* code = codes.data_ptr<int32_t>();
    float* q = Q.data_ptr<float>();
    std::vector<const float*> scales(size_t(s1 - s0));
    std::vector<const int32_t*> zps(size_t(s1 - s0));
    for (int64_t c = s0; c < s1; ++c) {
        const GptqColumns::RowGrid& g = rowGrids[size_t(order[size_t(i1 + c)] / groupSize)];
        scales[size_t(c - s0)] = g.scale.data_ptr<float>();
        zps[size_t(c - s0)] = g.zeroPoint.data_ptr<int32_t>();
    }
    at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            float* w = w1 + r * count;
            for (int64_t c = s0; c < s1; ++c) {
                const float scale = scales[size_t(c - s0)][r];
                const int32_t zp = zps[size_t(c - s0)][r];
                const float x = w[c];
                const float v = std::clamp(
                    std::nearbyint(x * (1.0f / scale)) + static_cast<float>(zp), qmin, qmax);
                const int32_t k = std::isnan(v) ? zp : static_cast<int32_t>(v);
                const float deq = static_cast<float>(k - zp) * scale;
                code[r * cols + i1 + c] = k;
                q[r * cols + i1 + c] = deq;
                const float e = (x - deq) / h[c * count + c];
                err1[r * count + c] = e;
                const float* hrow = h + c * count;
                if (p == nullptr) {
                    for (int64_t j = c + 1; j < count; ++j)
                        w[j] -= e * hrow[j];
                } else {
                    // GPTAQ: the column itself is updated too (the block update reads it).
                    const float* prow = p + c * count;
                    for (int64_t j = c; j < count; ++j)
                        w[j] -= e * hrow[j] - x * prow[j];
                }
            }
        }
    });
}

} // namespace

GptqColumns::GptqColumns(const at::Tensor& weight, const at::Tensor& hessian,
                         const quant::QuantSpec& spec, bool descAct, bool staticGroups,
                         const std::string& layer, const std::string& algorithm)
    : m_spec(spec), m_grid(columnGridSpec(spec)), m_layer(layer), m_staticGroups(staticGroups),
      m_descAct(descAct) {
    if (weight.dim() != 2 || hessian.dim() != 2 || hessian.size(0) != weight.size(1) ||
        hessian.size(1) != weight.size(1))
        throw Error(layer, "weight", "GPTQ needs an [out, in] weight and an [in, in] Hessian");
    checkGptqSpec(spec, layer, algorithm);
    m_cols = weight.size(1);
    m_perGroup = spec.granularity == quant::Granularity::PerGroup;
    if (m_perGroup && m_cols % spec.groupSize != 0)
        throw Error(layer, "weight.group_size",
                    "group size " + std::to_string(spec.groupSize) + " does not divide " +
                        std::to_string(m_cols) + " input features");
    m_groupSize = m_perGroup ? spec.groupSize : m_cols;

    m_W = weight.to(at::kFloat).clone();
    m_H = hessian.to(m_W.device(), at::kFloat).clone();
    // Inputs that are always zero carry no information: fix their diagonal and their weights.
    m_dead = m_H.diagonal() == 0;
    m_H.diagonal().masked_fill_(m_dead, 1.0);
    m_W.masked_fill_(m_dead.unsqueeze(0), 0.0);

    // One grid per group: [out] scales and zero points, filled as the loop reaches the group
    // (or all at once from the original weights with static_groups).
    const int64_t groups = m_cols / m_groupSize;
    m_grids.resize(size_t(groups));
    m_rowGrids.resize(size_t(groups));
    if (staticGroups || !m_perGroup)
        for (int64_t g = 0; g < groups; ++g)
            refreshGrid(g, m_W.narrow(1, g * m_groupSize, m_groupSize));

    if (descAct) {
        if (m_perGroup && !staticGroups)
            throw Error(layer, "desc_act", "desc_act needs static_groups (as Quark)");
        m_perm = at::argsort(m_H.diagonal(), /*dim=*/0, /*descending=*/true);
        m_W = m_W.index_select(1, m_perm);
        m_H = m_H.index_select(0, m_perm).index_select(1, m_perm);
        m_invperm = at::argsort(m_perm);
    }
    m_order.resize(size_t(m_cols));
    if (descAct) {
        const at::Tensor host = m_perm.to(at::kCPU, at::kLong).contiguous();
        std::copy(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + m_cols, m_order.begin());
    } else {
        for (int64_t c = 0; c < m_cols; ++c)
            m_order[size_t(c)] = c;
    }
    if (!at::isfinite(m_H).all().item<bool>())
        throw Error(layer, "inputs",
                    "the calibration inputs of this layer hold NaN or Inf: GPTQ cannot weigh its "
                    "columns (exclude the layer or check the model's activations)");
    m_codes = at::empty(m_W.sizes(), m_W.options().dtype(at::kInt));
    m_Q = at::empty_like(m_W);
}

at::Tensor GptqColumns::permuted(const at::Tensor& square) const {
    const at::Tensor s = square.to(m_W.device(), at::kFloat);
    return m_descAct ? s.index_select(0, m_perm).index_select(1, m_perm) : s;
}

void GptqColumns::refreshGrid(int64_t group, const at::Tensor& columns) {
    m_grids[size_t(group)] = quant::computeParams(m_grid, quant::observeRange(columns, m_grid));
    m_rowGrids[size_t(group)] = rowGridOf(m_grids[size_t(group)], m_W.size(0));
}

void GptqColumns::ensureGrid(int64_t column) {
    const int64_t g = m_order[size_t(column)] / m_groupSize;
    if (!m_grids[size_t(g)].scale.defined())
        refreshGrid(g, m_W.narrow(1, g * m_groupSize, m_groupSize));
}

at::Tensor GptqColumns::inverseFactor(double dampPercent, double& dampUsed) const {
    // H + damp I with the damping raised until H is positive definite; its inverse's upper
    // Cholesky factor.
    const double meanDiag = m_H.diagonal().mean().item<double>();
    double damp = dampPercent * meanDiag;
    for (int attempt = 0;; ++attempt) {
        const at::Tensor damped = m_H + at::eye(m_cols, m_H.options()) * (damp > 0 ? damp : 0.0);
        auto [chol, info] = at::linalg_cholesky_ex(damped);
        if (info.item<int64_t>() == 0) {
            dampUsed = damp;
            return at::linalg_cholesky(at::cholesky_inverse(chol), /*upper=*/true);
        }
        if (attempt == 6)
            throw Error(m_layer, "damp_percent",
                        "the input Hessian is not positive definite even with damping " +
                            std::to_string(damp) +
                            " (1e6 times the requested); the captured "
                            "inputs may hold NaN or Inf");
        damp = (damp > 0 ? damp : 1e-8 * std::max(meanDiag, 1e-30)) * 10.0;
    }
}

at::Tensor GptqColumns::quantizeColumn(int64_t c, const at::Tensor& values) {
    ensureGrid(c);
    const quant::QuantParams& p = m_grids[size_t(m_order[size_t(c)] / m_groupSize)];
    const quant::QuantizedTensor qt = quant::quantize(values.reshape({-1, 1}), m_grid, p);
    const at::Tensor q = quant::dequantize(qt, m_grid, at::kFloat);
    m_codes.narrow(1, c, 1).copy_(qt.codes);
    m_Q.narrow(1, c, 1).copy_(q);
    return q.reshape({-1});
}

void GptqColumns::run(const at::Tensor& factor, const at::Tensor& correction, int64_t first,
                      int64_t blockSize, const std::function<void(double)>& progress) {
    const int64_t cols = m_cols;
    const bool corrected = correction.defined();
    for (int64_t i1 = first; i1 < cols; i1 += blockSize) {
        if (progress)
            progress(double(i1) / double(cols));
        const int64_t i2 = std::min(i1 + blockSize, cols);
        const int64_t count = i2 - i1;
        const int64_t f1 = i1 - first, f2 = i2 - first; // the block in the factor's indices
        at::Tensor W1 = m_W.narrow(1, i1, count).clone(at::MemoryFormat::Contiguous);
        at::Tensor Err1 = at::zeros_like(W1);
        const at::Tensor Hinv1 = factor.narrow(0, f1, count).narrow(1, f1, count).contiguous();
        const at::Tensor P1 =
            corrected ? correction.narrow(0, f1, count).narrow(1, f1, count).contiguous()
                      : at::Tensor();
        // The group's grid from its weights as the updates so far left them: inside this block
        // from W1, beyond it from W. (AutoGPTQ and Quark read W for the whole group, i.e. before
        // this block's updates; with groups that fit in a block that ignores the error already
        // spread onto the group. Deliberately not copied.)
        auto refreshInBlock = [&](int64_t i) {
            const int64_t inBlock = std::min(m_groupSize, count - i);
            at::Tensor columns = W1.narrow(1, i, inBlock);
            if (inBlock < m_groupSize)
                columns = at::cat({columns, m_W.narrow(1, i2, m_groupSize - inBlock)}, 1);
            refreshGrid(m_order[size_t(i1 + i)] / m_groupSize, columns);
        };
        auto startsGroup = [&](int64_t i) {
            return m_perGroup && !m_staticGroups && (i1 + i) % m_groupSize == 0;
        };
        if (W1.is_cpu()) {
            // Between group starts every output row runs on its own: one pass per row over the
            // block's columns instead of a dozen ATen calls per column.
            for (int64_t s0 = 0; s0 < count;) {
                if (startsGroup(s0))
                    refreshInBlock(s0);
                int64_t s1 = s0 + 1;
                while (s1 < count && !startsGroup(s1))
                    ++s1;
                quantizeColumnsCpu(W1, Err1, Hinv1, P1, m_codes, m_Q, m_rowGrids, m_order, i1, s0,
                                   s1, m_groupSize, m_grid);
                s0 = s1;
            }
        } else {
            for (int64_t i = 0; i < count; ++i) {
                const int64_t col = i1 + i;
                // The original column this one is (act order permutes them); its group.
                const int64_t g = m_order[size_t(col)] / m_groupSize;
                if (startsGroup(i))
                    refreshInBlock(i);
                const quant::QuantParams& p = m_grids[size_t(g)];
                const at::Tensor w = W1.narrow(1, i, 1); // [out, 1]
                const quant::QuantizedTensor qt = quant::quantize(w, m_grid, p);
                const at::Tensor q = quant::dequantize(qt, m_grid, at::kFloat);
                m_codes.narrow(1, col, 1).copy_(qt.codes);
                m_Q.narrow(1, col, 1).copy_(q);
                const at::Tensor err = (w - q) / Hinv1[i][i];
                if (corrected) {
                    // Evaluated before the update lands: w is the column before quantization.
                    const at::Tensor step =
                        at::matmul(err, Hinv1.narrow(0, i, 1).narrow(1, i, count - i)) -
                        at::matmul(w, P1.narrow(0, i, 1).narrow(1, i, count - i));
                    W1.narrow(1, i, count - i).sub_(step);
                } else {
                    W1.narrow(1, i, count - i)
                        .sub_(at::matmul(err, Hinv1.narrow(0, i, 1).narrow(1, i, count - i)));
                }
                Err1.narrow(1, i, 1).copy_(err);
            }
        }
        if (i2 < cols) {
            const at::Tensor spread =
                at::matmul(Err1, factor.narrow(0, f1, count).narrow(1, f2, cols - i2));
            if (corrected)
                m_W.narrow(1, i2, cols - i2)
                    .sub_(spread -
                          at::matmul(W1, correction.narrow(0, f1, count).narrow(1, f2, cols - i2)));
            else
                m_W.narrow(1, i2, cols - i2).sub_(spread);
        }
    }
}

GptqResult GptqColumns::result(double dampUsed) const {
    at::Tensor codes = m_codes, Q = m_Q;
    if (m_descAct) {
        codes = codes.index_select(1, m_invperm);
        Q = Q.index_select(1, m_invperm);
    }
    // The grids in the spec's own layout: [out, groups] per group, [out] per channel.
    std::vector<at::Tensor> scales, zps;
    for (const auto& p : m_grids) {
        scales.push_back(p.scale.to(at::kFloat).reshape({-1, 1}));
        zps.push_back(p.zeroPoint.to(at::kInt).reshape({-1, 1}));
    }
    GptqResult r;
    r.codes.dtype = m_spec.dtype;
    r.codes.codes = codes.contiguous();
    r.codes.params.scale = m_perGroup ? at::cat(scales, 1) : scales[0].reshape({-1});
    r.codes.params.zeroPoint = m_perGroup ? at::cat(zps, 1) : zps[0].reshape({-1});
    r.dequantized = Q.contiguous();
    r.dampingUsed = dampUsed;
    return r;
}

} // namespace qs::algo
