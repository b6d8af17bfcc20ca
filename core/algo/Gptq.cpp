#include "algo/Gptq.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

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

void checkGroups(const quant::QuantSpec& spec, const at::Tensor& w, const std::string& layer) {
    if (spec.granularity == quant::Granularity::PerGroup && w.size(1) % spec.groupSize != 0)
        throw Error(layer, "weight.group_size",
                    "group size " + std::to_string(spec.groupSize) + " does not divide " +
                        std::to_string(w.size(1)) + " input features");
}

// One group's grid as the integer kernel applies it (quant/IntKernels.cpp): float32 scales
// clamped to the smallest normal, int32 zero points, one per output row, on the CPU.
struct RowGrid {
    at::Tensor scale, zeroPoint;
    static RowGrid of(const quant::QuantParams& p, int64_t rows) {
        if (p.scale.device().is_cuda())
            return {};
        return {at::clamp_min(p.scale.to(at::kFloat).reshape({-1}).expand({rows}), FLT_MIN)
                    .contiguous(),
                p.zeroPoint.to(at::kInt).reshape({-1}).expand({rows}).contiguous()};
    }
};

// Columns [s0, s1) of the block starting at column i1: each quantized on its group's grid with
// exactly the integer kernel's arithmetic (x * (1/scale) rounded half to even, plus the zero
// point, clamped; NaN to the zero point; dequantized as (code - zp) * scale), its rounding error
// divided by Hinv1's diagonal and spread over the block's later columns, row by row. The same
// float operations in the same order as the ATen column loop (no contraction: -ffp-contract=off),
// so the result is bit-identical to it.
void quantizeColumnsCpu(at::Tensor& W1, at::Tensor& Err1, const at::Tensor& Hinv1,
                        at::Tensor& codes, at::Tensor& Q, const std::vector<RowGrid>& rowGrids,
                        const std::vector<int64_t>& order, int64_t i1, int64_t s0, int64_t s1,
                        int64_t groupSize, const quant::QuantSpec& grid) {
    const int64_t rows = W1.size(0), count = W1.size(1), cols = codes.size(1);
    const quant::TypeTraits& t = quant::traits(grid.dtype);
    const float qmin = static_cast<float>(t.qmin), qmax = static_cast<float>(t.qmax);
    float* w1 = W1.data_ptr<float>();
    float* err1 = Err1.data_ptr<float>();
    const float* h = Hinv1.data_ptr<float>();
    int32_t* code = codes.data_ptr<int32_t>();
    float* q = Q.data_ptr<float>();
    std::vector<const float*> scales(size_t(s1 - s0));
    std::vector<const int32_t*> zps(size_t(s1 - s0));
    for (int64_t c = s0; c < s1; ++c) {
        const RowGrid& g = rowGrids[size_t(order[size_t(i1 + c)] / groupSize)];
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
                for (int64_t j = c + 1; j < count; ++j)
                    w[j] -= e * hrow[j];
            }
        }
    });
}

} // namespace

void checkGptqSpec(const quant::QuantSpec& spec, const std::string& layer) {
    if (quant::traits(spec.dtype).encoding != quant::Encoding::Int)
        throw Error(layer, "weight.dtype",
                    "GPTQ quantizes integer weights (int/uint per group or per channel), not " +
                        quant::dataTypeName(spec.dtype));
    const bool perGroup = spec.granularity == quant::Granularity::PerGroup;
    if (!perGroup && spec.granularity != quant::Granularity::PerChannel)
        throw Error(layer, "weight.qscheme",
                    "GPTQ supports per_group and per_channel weights (as Quark); exclude this "
                    "layer from GPTQ (inside_layer_modules) or give it such a scheme");
    if (perGroup && !(spec.chAxis == -1 || spec.chAxis == 1))
        throw Error(layer, "weight.ch_axis", "GPTQ groups run along the input axis");
    if (!perGroup && spec.chAxis != 0)
        throw Error(layer, "weight.ch_axis", "GPTQ per-channel grids are per output channel");
}

at::Tensor gptqHessianPart(const at::Tensor& x, int64_t inFeatures, const std::string& layer) {
    if (x.dim() != 2 || x.size(1) != inFeatures)
        throw Error(layer, "inputs",
                    "captured inputs of width " + std::to_string(x.size(-1)) + ", expected " +
                        std::to_string(inFeatures));
    const at::Tensor xd = x.to(at::kDouble);
    return at::matmul(xd.t(), xd);
}

at::Tensor gptqHessianFromSum(const at::Tensor& sum, int64_t rows, const std::string& layer) {
    if (rows == 0)
        throw Error(layer, "inputs", "GPTQ needs calibration inputs (zero rows captured)");
    return (sum * (2.0 / double(rows))).to(at::kFloat);
}

at::Tensor gptqHessian(const std::vector<at::Tensor>& inputs, int64_t inFeatures,
                       const std::string& layer) {
    if (inputs.empty())
        throw Error(layer, "inputs", "GPTQ needs calibration inputs (none were captured)");
    at::Tensor h;
    int64_t rows = 0;
    for (const at::Tensor& x : inputs) {
        const at::Tensor part = gptqHessianPart(x, inFeatures, layer);
        h = h.defined() ? h + part : part;
        rows += x.size(0);
    }
    return gptqHessianFromSum(h, rows, layer);
}

GptqResult gptqQuantize(const at::Tensor& weight, const at::Tensor& hessian,
                        const quant::QuantSpec& spec, const GptqOptions& options,
                        const std::string& layer, const std::function<void(double)>& progress) {
    if (weight.dim() != 2 || hessian.dim() != 2 || hessian.size(0) != weight.size(1) ||
        hessian.size(1) != weight.size(1))
        throw Error(layer, "weight", "GPTQ needs an [out, in] weight and an [in, in] Hessian");
    checkGptqSpec(spec, layer);
    checkGroups(spec, weight, layer);
    const int64_t cols = weight.size(1);
    const bool perGroup = spec.granularity == quant::Granularity::PerGroup;
    const int64_t groupSize = perGroup ? spec.groupSize : cols;
    const quant::QuantSpec grid = columnGridSpec(spec);

    at::Tensor W = weight.to(at::kFloat).clone();
    at::Tensor H = hessian.to(W.device(), at::kFloat).clone();
    // Inputs that are always zero carry no information: fix their diagonal and their weights.
    const at::Tensor dead = H.diagonal() == 0;
    H.diagonal().masked_fill_(dead, 1.0);
    W.masked_fill_(dead.unsqueeze(0), 0.0);

    // One grid per group: [out] scales and zero points, filled as the loop reaches the group
    // (or all at once from the original weights with static_groups).
    const int64_t groups = cols / groupSize;
    std::vector<quant::QuantParams> grids(static_cast<size_t>(groups));
    auto gridOf = [&](const at::Tensor& columns) {
        return quant::computeParams(grid, quant::observeRange(columns, grid));
    };
    std::vector<RowGrid> rowGrids(static_cast<size_t>(groups));
    if (options.staticGroups || !perGroup)
        for (int64_t g = 0; g < groups; ++g) {
            grids[size_t(g)] = gridOf(W.narrow(1, g * groupSize, groupSize));
            rowGrids[size_t(g)] = RowGrid::of(grids[size_t(g)], W.size(0));
        }

    at::Tensor perm, invperm;
    if (options.descAct) {
        if (perGroup && !options.staticGroups)
            throw Error(layer, "desc_act", "desc_act needs static_groups (as Quark)");
        perm = at::argsort(H.diagonal(), /*dim=*/0, /*descending=*/true);
        W = W.index_select(1, perm);
        H = H.index_select(0, perm).index_select(1, perm);
        invperm = at::argsort(perm);
    }
    std::vector<int64_t> order(static_cast<size_t>(cols));
    if (options.descAct) {
        const at::Tensor host = perm.to(at::kCPU, at::kLong).contiguous();
        std::copy(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + cols, order.begin());
    } else {
        for (int64_t c = 0; c < cols; ++c)
            order[size_t(c)] = c;
    }

    if (!at::isfinite(H).all().item<bool>())
        throw Error(layer, "inputs",
                    "the calibration inputs of this layer hold NaN or Inf: GPTQ cannot weigh its "
                    "columns (exclude the layer or check the model's activations)");
    // Hinv: the upper Cholesky factor of H^-1, with damping raised until H is positive definite.
    const double meanDiag = H.diagonal().mean().item<double>();
    double damp = options.dampPercent * meanDiag;
    at::Tensor hinv;
    for (int attempt = 0;; ++attempt) {
        const at::Tensor damped = H + at::eye(cols, H.options()) * (damp > 0 ? damp : 0.0);
        auto [chol, info] = at::linalg_cholesky_ex(damped);
        if (info.item<int64_t>() == 0) {
            hinv = at::linalg_cholesky(at::cholesky_inverse(chol), /*upper=*/true);
            break;
        }
        if (attempt == 6)
            throw Error(layer, "damp_percent",
                        "the input Hessian is not positive definite even with damping " +
                            std::to_string(damp) +
                            " (1e6 times the requested); the captured "
                            "inputs may hold NaN or Inf");
        damp = (damp > 0 ? damp : 1e-8 * std::max(meanDiag, 1e-30)) * 10.0;
    }

    at::Tensor codes = at::empty(W.sizes(), W.options().dtype(at::kInt));
    at::Tensor Q = at::empty_like(W);
    for (int64_t i1 = 0; i1 < cols; i1 += options.blockSize) {
        if (progress)
            progress(double(i1) / double(cols));
        const int64_t i2 = std::min(i1 + options.blockSize, cols);
        const int64_t count = i2 - i1;
        at::Tensor W1 = W.narrow(1, i1, count).clone(at::MemoryFormat::Contiguous);
        at::Tensor Err1 = at::zeros_like(W1);
        const at::Tensor Hinv1 = hinv.narrow(0, i1, count).narrow(1, i1, count).contiguous();
        // The group's grid from its weights as the updates so far left them: inside this block
        // from W1, beyond it from W. (AutoGPTQ and Quark read W for the whole group, i.e. before
        // this block's updates; with groups that fit in a block that ignores the error already
        // spread onto the group. Deliberately not copied.)
        auto refreshGrid = [&](int64_t i) {
            const int64_t inBlock = std::min(groupSize, count - i);
            at::Tensor columns = W1.narrow(1, i, inBlock);
            if (inBlock < groupSize)
                columns = at::cat({columns, W.narrow(1, i2, groupSize - inBlock)}, 1);
            const int64_t g = order[size_t(i1 + i)] / groupSize;
            grids[size_t(g)] = gridOf(columns);
            rowGrids[size_t(g)] = RowGrid::of(grids[size_t(g)], W.size(0));
        };
        auto startsGroup = [&](int64_t i) {
            return perGroup && !options.staticGroups && (i1 + i) % groupSize == 0;
        };
        if (W1.is_cpu()) {
            // Between group starts every output row runs on its own: one pass per row over the
            // block's columns instead of a dozen ATen calls per column.
            for (int64_t s0 = 0; s0 < count;) {
                if (startsGroup(s0))
                    refreshGrid(s0);
                int64_t s1 = s0 + 1;
                while (s1 < count && !startsGroup(s1))
                    ++s1;
                quantizeColumnsCpu(W1, Err1, Hinv1, codes, Q, rowGrids, order, i1, s0, s1,
                                   groupSize, grid);
                s0 = s1;
            }
        } else {
            for (int64_t i = 0; i < count; ++i) {
                const int64_t col = i1 + i;
                // The original column this one is (act order permutes them); its group.
                const int64_t g = order[size_t(col)] / groupSize;
                if (startsGroup(i))
                    refreshGrid(i);
                const quant::QuantParams& p = grids[size_t(g)];
                const at::Tensor w = W1.narrow(1, i, 1); // [out, 1]
                const quant::QuantizedTensor qt = quant::quantize(w, grid, p);
                const at::Tensor q = quant::dequantize(qt, grid, at::kFloat);
                codes.narrow(1, col, 1).copy_(qt.codes);
                Q.narrow(1, col, 1).copy_(q);
                const at::Tensor err = (w - q) / Hinv1[i][i];
                W1.narrow(1, i, count - i)
                    .sub_(at::matmul(err, Hinv1.narrow(0, i, 1).narrow(1, i, count - i)));
                Err1.narrow(1, i, 1).copy_(err);
            }
        }
        if (i2 < cols)
            W.narrow(1, i2, cols - i2)
                .sub_(at::matmul(Err1, hinv.narrow(0, i1, count).narrow(1, i2, cols - i2)));
    }
    if (options.descAct) {
        codes = codes.index_select(1, invperm);
        Q = Q.index_select(1, invperm);
    }

    // The grids in the spec's own layout: [out, groups] per group, [out] per channel.
    std::vector<at::Tensor> scales, zps;
    for (const auto& p : grids) {
        scales.push_back(p.scale.to(at::kFloat).reshape({-1, 1}));
        zps.push_back(p.zeroPoint.to(at::kInt).reshape({-1, 1}));
    }
    GptqResult r;
    r.codes.dtype = spec.dtype;
    r.codes.codes = codes.contiguous();
    r.codes.params.scale = perGroup ? at::cat(scales, 1) : scales[0].reshape({-1});
    r.codes.params.zeroPoint = perGroup ? at::cat(zps, 1) : zps[0].reshape({-1});
    r.dequantized = Q.contiguous();
    r.dampingUsed = damp;
    return r;
}

} // namespace qs::algo
