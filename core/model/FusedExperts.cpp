#include "model/FusedExperts.h"

#include "util/Error.h"

#include <ATen/ATen.h>

namespace qs {

namespace {

const at::Tensor& stored(const std::map<std::string, at::Tensor>& fused, const std::string& name) {
    const auto it = fused.find(name);
    if (it == fused.end() || !it->second.defined())
        throw Error("experts", name, "fused expert tensor not given");
    return it->second;
}

at::Tensor optional(const std::map<std::string, at::Tensor>& fused, const std::string& name) {
    const auto it = fused.find(name);
    return it == fused.end() ? at::Tensor() : it->second;
}

} // namespace

std::vector<std::string> fusedExpertTensors(ExpertStorage storage, bool bias) {
    switch (storage) {
    case ExpertStorage::PerExpert:
        return {};
    case ExpertStorage::DbrxRows:
        return {"w1", "v1", "w2"};
    case ExpertStorage::GateUpHalves:
    case ExpertStorage::GateUpInterleaved:
        if (bias)
            return {"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"};
        return {"gate_up_proj", "down_proj"};
    }
    return {};
}

std::vector<int64_t> fusedExpertShape(ExpertStorage storage, const std::string& relative,
                                      int64_t experts, int64_t intermediate, int64_t hidden) {
    if (storage == ExpertStorage::DbrxRows)
        return {experts * intermediate, hidden};
    if (relative == "gate_up_proj")
        return {experts, hidden, 2 * intermediate};
    if (relative == "gate_up_proj_bias")
        return {experts, 2 * intermediate};
    if (relative == "down_proj")
        return {experts, intermediate, hidden};
    if (relative == "down_proj_bias")
        return {experts, hidden};
    throw Error("experts", relative, "not a fused expert tensor of this layout");
}

ExpertSlices sliceExpert(ExpertStorage storage, const std::map<std::string, at::Tensor>& fused,
                         int64_t e, int64_t experts) {
    ExpertSlices x;
    switch (storage) {
    case ExpertStorage::PerExpert:
        throw Error("experts", "storage", "experts stored one tensor per linear have no slices");
    case ExpertStorage::DbrxRows: {
        const at::Tensor& w1 = stored(fused, "w1");
        const int64_t rows = w1.size(0) / experts;
        x.gate = w1.narrow(0, e * rows, rows).contiguous();
        x.up = stored(fused, "v1").narrow(0, e * rows, rows).contiguous();
        x.down = stored(fused, "w2").narrow(0, e * rows, rows).t().contiguous();
        return x;
    }
    case ExpertStorage::GateUpHalves:
    case ExpertStorage::GateUpInterleaved: {
        const at::Tensor gateUp = stored(fused, "gate_up_proj").select(0, e); // [H, 2I]
        const int64_t width = gateUp.size(1);
        const at::Tensor bias = optional(fused, "gate_up_proj_bias");
        if (storage == ExpertStorage::GateUpHalves) {
            x.gate = gateUp.narrow(1, 0, width / 2).t().contiguous();
            x.up = gateUp.narrow(1, width / 2, width / 2).t().contiguous();
            if (bias.defined()) {
                x.gateBias = bias.select(0, e).narrow(0, 0, width / 2).contiguous();
                x.upBias = bias.select(0, e).narrow(0, width / 2, width / 2).contiguous();
            }
        } else {
            x.gate = gateUp.slice(1, 0, width, 2).t().contiguous();
            x.up = gateUp.slice(1, 1, width, 2).t().contiguous();
            if (bias.defined()) {
                x.gateBias = bias.select(0, e).slice(0, 0, width, 2).contiguous();
                x.upBias = bias.select(0, e).slice(0, 1, width, 2).contiguous();
            }
        }
        x.down = stored(fused, "down_proj").select(0, e).t().contiguous(); // [H, I]
        const at::Tensor downBias = optional(fused, "down_proj_bias");
        if (downBias.defined())
            x.downBias = downBias.select(0, e).contiguous();
        return x;
    }
    }
    return x;
}

std::map<std::string, at::Tensor> fuseExperts(ExpertStorage storage,
                                              const std::vector<ExpertSlices>& experts) {
    std::vector<at::Tensor> gateUp, down, gateUpBias, downBias;
    for (const ExpertSlices& x : experts) {
        switch (storage) {
        case ExpertStorage::PerExpert:
            throw Error("experts", "storage", "experts stored one tensor per linear are not fused");
        case ExpertStorage::DbrxRows:
            break;
        case ExpertStorage::GateUpHalves:
            gateUp.push_back(at::cat({x.gate.t(), x.up.t()}, 1));
            if (x.gateBias.defined())
                gateUpBias.push_back(at::cat({x.gateBias, x.upBias}, 0));
            break;
        case ExpertStorage::GateUpInterleaved:
            // [H, I, 2] -> [H, 2I]: column 2i is gate's i, 2i + 1 up's i
            gateUp.push_back(at::stack({x.gate.t(), x.up.t()}, 2).reshape({x.gate.size(1), -1}));
            if (x.gateBias.defined())
                gateUpBias.push_back(at::stack({x.gateBias, x.upBias}, 1).reshape({-1}));
            break;
        }
        down.push_back(x.down.t());
        if (x.downBias.defined())
            downBias.push_back(x.downBias);
    }
    std::map<std::string, at::Tensor> out;
    if (storage == ExpertStorage::DbrxRows) {
        std::vector<at::Tensor> w1, v1;
        for (const ExpertSlices& x : experts) {
            w1.push_back(x.gate);
            v1.push_back(x.up);
        }
        out["w1"] = at::cat(w1, 0);
        out["v1"] = at::cat(v1, 0);
        out["w2"] = at::cat(down, 0); // each expert's down projection transposed back
        return out;
    }
    out["gate_up_proj"] = at::stack(gateUp, 0);
    out["down_proj"] = at::stack(down, 0);
    if (!gateUpBias.empty())
        out["gate_up_proj_bias"] = at::stack(gateUpBias, 0);
    if (!downBias.empty())
        out["down_proj_bias"] = at::stack(downBias, 0);
    return out;
}

} // namespace qs
