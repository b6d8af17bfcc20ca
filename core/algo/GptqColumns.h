// The column machinery GPTQ's family of solvers shares (GPTQ, GPTAQ, Qronos: Gptq.h, Gptaq.h,
// Qronos.h): one weight being quantized column by column in the order of the inverse Hessian's
// Cholesky factor, each column's rounding error spread over the columns not yet quantized,
// lazily in blocks. What differs between the solvers is what they hand the loop: GPTAQ adds an
// asymmetric correction term P (its paper's eq. 10), Qronos quantizes the first column itself
// and runs the loop from the second with the factor of the reduced inverse.
//
// Each group's grid is taken when the loop reaches the group's first column, from the weights as
// the earlier columns left them (static_groups: from the original weights, before any update).
#pragma once

#include "algo/Gptq.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace qs::algo {

class GptqColumns {
public:
    // Takes float32 working copies: `weight` [out, in] with the columns of always-zero inputs
    // (zero Hessian diagonal) zeroed, `hessian` [in, in] with their diagonal set to 1, both
    // permuted to decreasing Hessian diagonal when `descAct`; static groups' grids from the
    // weights so prepared (before the permutation). Throws qs::Error naming `layer` for a spec
    // GPTQ cannot solve (the refusal names `algorithm`: GPTQ, GPTAQ, Qronos), a group size that
    // does not divide the columns, desc_act without static_groups on per-group weights, and a
    // Hessian holding NaN or Inf.
    GptqColumns(const at::Tensor& weight, const at::Tensor& hessian, const quant::QuantSpec& spec,
                bool descAct, bool staticGroups, const std::string& layer,
                const std::string& algorithm = "GPTQ");

    // The working weight and Hessian (permuted when desc_act); the loop updates the weight.
    at::Tensor& weight() { return m_W; }
    const at::Tensor& hessian() const { return m_H; }
    // The inputs whose Hessian diagonal was zero (original order), bool [in].
    const at::Tensor& dead() const { return m_dead; }
    // A square [in, in] matrix in the loop's column order (rows and columns permuted as H).
    at::Tensor permuted(const at::Tensor& square) const;

    // The upper Cholesky factor of (H + damp I)^-1, damp = dampPercent times H's mean diagonal,
    // multiplied by 10 up to 1e6 times while H + damp I is not positive definite (the damping
    // used goes to `dampUsed`); then a qs::Error naming the layer.
    at::Tensor inverseFactor(double dampPercent, double& dampUsed) const;

    // Quantizes loop column `c` (in the loop's order) from `values` [out] instead of the working
    // weight (Qronos' first column): its codes and dequantized values are kept as the loop's
    // would be; returns the dequantized column [out].
    at::Tensor quantizeColumn(int64_t c, const at::Tensor& values);

    // The loop over columns [first, in): `factor` is the upper Cholesky factor of the inverse
    // Hessian over those columns ([in - first]^2); `correction`, when defined, GPTAQ's P over
    // the same columns (strictly upper triangular): each update subtracts err x factor row minus
    // w x P row, w the column before it was quantized (within a lazy block; across blocks the
    // block's columns as the in-block updates left them, as GPTAQ's reference does).
    // `progress` is called before each lazy block with the fraction of columns done and may
    // throw (qs::Cancelled).
    void run(const at::Tensor& factor, const at::Tensor& correction, int64_t first,
             int64_t blockSize, const std::function<void(double)>& progress);

    // The codes and grids in the spec's layout, columns back in their original order.
    GptqResult result(double dampUsed) const;

    // A group's grid, as the integer kernel applies it (one float32 scale clamped to the
    // smallest normal and one int32 zero point per output row; CPU only).
    struct RowGrid {
        at::Tensor scale, zeroPoint;
    };

private:
    void refreshGrid(int64_t group, const at::Tensor& columns);
    void ensureGrid(int64_t column);

    quant::QuantSpec m_spec, m_grid;
    std::string m_layer;
    bool m_perGroup = false, m_staticGroups = false, m_descAct = false;
    int64_t m_cols = 0, m_groupSize = 0;
    at::Tensor m_W, m_H, m_dead, m_perm, m_invperm, m_codes, m_Q;
    std::vector<quant::QuantParams> m_grids;
    std::vector<RowGrid> m_rowGrids;
    std::vector<int64_t> m_order; // loop column -> original column
};

} // namespace qs::algo
