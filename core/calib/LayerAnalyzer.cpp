#include "calib/LayerAnalyzer.h"

#include "util/Error.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace qs {

namespace {

double median(std::vector<float> v) {
    if (v.empty())
        return 0.0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

} // namespace

LayerAnalyzer::LayerAnalyzer(const std::vector<LayerPlan>& plans, int64_t tokensBefore) {
    for (const LayerPlan& p : plans)
        if (tokensBefore > 0)
            m_layers[p.name].channels.skipSamples(tokensBefore);
        else
            m_layers[p.name];
}

void LayerAnalyzer::appendState(std::vector<double>& out) const {
    out.push_back(m_residualSquares);
    out.push_back(double(m_residualTokens));
    for (const auto& [name, a] : m_layers) {
        for (const ErrorAccumulator* e :
             {&a.local, &a.localRoundToNearest, &a.accumulated, &a.inputQuant, &a.drift})
            e->appendState(out);
        out.push_back(double(a.partsLocal.size()));
        for (const ErrorAccumulator& e : a.partsLocal)
            e.appendState(out);
        a.channels.appendState(out);
    }
}

void LayerAnalyzer::mergeState(const double*& p, const at::Device& device) {
    m_residualSquares += p[0];
    m_residualTokens += int64_t(p[1]);
    p += 2;
    for (auto& [name, a] : m_layers) {
        for (ErrorAccumulator* e :
             {&a.local, &a.localRoundToNearest, &a.accumulated, &a.inputQuant, &a.drift})
            e->merge(ErrorAccumulator::fromState(p));
        const size_t parts = size_t(*p++);
        a.partsLocal.resize(std::max(a.partsLocal.size(), parts));
        for (size_t k = 0; k < parts; ++k)
            a.partsLocal[k].merge(ErrorAccumulator::fromState(p));
        a.channels.merge(ChannelStatsAccumulator::fromState(p, device));
    }
}

LayerAnalyzer LayerAnalyzer::combineShards(const CalibrationShards& shards,
                                           const std::vector<LayerAnalyzer>& mine,
                                           const at::Device& device) {
    std::vector<std::vector<double>> states;
    for (const LayerAnalyzer& a : mine) {
        states.emplace_back();
        a.appendState(states.back());
    }
    const std::vector<std::vector<double>> all =
        gatherInShardOrder(shards, states, "the per-layer analysis");
    // The block's structure (fused parts, which layer took whose inputs) is the same in every
    // batch and on every rank: this rank's first analyzer's, with nothing accumulated.
    LayerAnalyzer merged;
    for (const auto& [name, a] : mine.front().m_layers) {
        Layer& m = merged.m_layers[name];
        m.parts = a.parts;
        m.inputsOf = a.inputsOf;
    }
    for (const std::vector<double>& state : all) {
        const double* p = state.data();
        merged.mergeState(p, device);
        if (p != state.data() + state.size())
            throw Error("the per-layer analysis", "calibration",
                        "a rank's statistics do not have this rank's layout (the ranks planned "
                        "different layers)");
    }
    return merged;
}

void LayerAnalyzer::addBatch(const std::vector<LayerPlan>& plans,
                             const std::vector<LinearLayer*>& linears,
                             const std::map<std::string, at::Tensor>& refInputs,
                             const std::map<std::string, at::Tensor>& refOutputs,
                             const std::map<std::string, at::Tensor>& quantInputs,
                             const std::map<std::string, at::Tensor>& quantOutputs) {
    // Linears fed the very same input tensor in both streams (q, k, v; gate, up) share its
    // statistics: the first of them computes them.
    auto sameTensor = [](const at::Tensor& a, const at::Tensor& b) {
        return a.is_same(b) || (a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() &&
                                a.strides() == b.strides() && a.dtype() == b.dtype());
    };
    std::vector<std::string> takers;
    for (size_t i = 0; i < plans.size(); ++i) {
        const LayerPlan& p = plans[i];
        Layer& a = m_layers.at(p.name);
        // A mixture-of-experts expert no token was routed to in this batch saw nothing.
        const auto in = refInputs.find(p.name);
        if (in == refInputs.end())
            continue;
        const at::Tensor& xRef = in->second;
        const at::Tensor& yRef = refOutputs.at(p.name);
        std::string inputsOf;
        if (!linears[i]->routed)
            for (const std::string& name : takers)
                if (sameTensor(refInputs.at(name), xRef) &&
                    sameTensor(quantInputs.at(name), quantInputs.at(p.name))) {
                    inputsOf = name;
                    break;
                }
        // The grouping is the block's: the same in every batch.
        a.inputsOf = inputsOf;
        if (inputsOf.empty()) {
            a.channels.add(xRef);
            if (!linears[i]->routed)
                takers.push_back(p.name);
        }
        // The two streams route tokens independently, so an expert's rows in one are not the
        // same tokens as in the other: no token-wise comparison for routed linears.
        if (!linears[i]->routed) {
            a.accumulated.add(quantOutputs.at(p.name), yRef);
            if (inputsOf.empty())
                a.drift.add(quantInputs.at(p.name), xRef);
        }
        if (!p.quantized())
            continue;
        // The layer alone: its quantizers and quantized weight on full-precision inputs.
        const at::Tensor xq = p.quantizeInput(xRef);
        if (p.input) {
            a.inputQuant.add(xq, xRef);
            a.channels.addQuantized(xq);
        }
        const at::Tensor yq =
            p.quantizeOutput(at::linear(xq, p.weight.dequantized, linears[i]->bias));
        // A layer AWQ clipped: its local errors against the layer before the algorithm, so the
        // clip's own error counts (the reference stream carries the clipped weight).
        const at::Tensor yLocalRef =
            p.weight.beforeAlgorithm.defined()
                ? at::linear(xRef, p.weight.beforeAlgorithm, linears[i]->bias)
                : yRef;
        a.local.add(yq, yLocalRef);
        if (p.weight.roundToNearest.defined())
            a.localRoundToNearest.add(
                p.quantizeOutput(at::linear(xq, p.weight.roundToNearest, linears[i]->bias)),
                yLocalRef);
        // A fused projection: the same error restricted to each logical part's outputs.
        if (a.parts.empty() && !linears[i]->parts.empty()) {
            a.parts = linears[i]->parts;
            a.partsLocal.resize(a.parts.size());
        }
        int64_t row = 0;
        for (size_t k = 0; k < a.parts.size(); ++k) {
            const int64_t n = a.parts[k].second;
            a.partsLocal[k].add(yq.narrow(-1, row, n), yLocalRef.narrow(-1, row, n));
            row += n;
        }
    }
}

void LayerAnalyzer::addBlockInput(const at::Tensor& refInput) {
    m_residualSquares += refInput.to(at::kDouble).pow(2).sum().item<double>();
    m_residualTokens += refInput.numel() / refInput.size(-1);
}

void LayerAnalyzer::finish(std::vector<LayerPlan>& plans) const {
    // The statistics of an input tensor, by the layer that took it: once for q, k and v.
    std::map<std::string, ChannelStatistics> inputStatistics;
    for (LayerPlan& p : plans) {
        const Layer& a = m_layers.at(p.name);
        LayerReport& rep = p.report;
        // What the weight errors are measured against (LayerPlan::WeightQuantization).
        const at::Tensor& unquantized =
            p.weight.beforeAlgorithm.defined() ? p.weight.beforeAlgorithm : p.weight.reference;
        if (p.scheme && p.weight.reference.defined()) {
            ErrorAccumulator w;
            w.add(p.weight.dequantized, unquantized);
            rep.weight = w.metrics();
            rep.weightHistogram = histogramOf(p.weight.reference, 128);
            rep.weightQuantizedHistogram = histogramOf(
                p.weight.dequantized, 128, rep.weightHistogram.lo, rep.weightHistogram.hi);
        }
        rep.outputLocal = a.local.metrics();
        if (rep.outputLocal.valid && m_residualTokens > 0 && m_residualSquares > 0 &&
            !rep.shape.empty())
            rep.klProxy = rep.outputLocal.mse * double(rep.shape[0]) /
                          (m_residualSquares / double(m_residualTokens));
        rep.transforms = p.transforms;
        rep.outputLocalRoundToNearest = a.localRoundToNearest.metrics();
        if (p.weight.roundToNearest.defined()) {
            ErrorAccumulator w;
            w.add(p.weight.roundToNearest, unquantized);
            rep.weightRoundToNearest = w.metrics();
        }
        if (rep.ranges.valid() && p.weight.reference.defined()) {
            const at::Tensor m = p.weight.reference.abs().amax(0).to(at::kCPU, at::kFloat);
            rep.ranges.weightAbsmaxAfter.assign(m.data_ptr<float>(),
                                                m.data_ptr<float>() + m.numel());
        }
        rep.parts.clear();
        int64_t row = 0;
        for (size_t k = 0; k < a.parts.size(); ++k) {
            PartReport part;
            part.name = a.parts[k].first;
            part.rowBegin = row;
            part.rows = a.parts[k].second;
            if (p.scheme && p.weight.reference.defined()) {
                ErrorAccumulator w;
                w.add(p.weight.dequantized.narrow(0, row, part.rows),
                      p.weight.reference.narrow(0, row, part.rows));
                part.weight = w.metrics();
            }
            part.outputLocal = a.partsLocal[k].metrics();
            rep.parts.push_back(part);
            row += part.rows;
        }
        rep.outputAccumulated = a.accumulated.metrics();
        rep.inputQuantization = a.inputQuant.metrics();
        const std::string& taker = a.inputsOf.empty() ? p.name : a.inputsOf;
        const Layer& inputs = m_layers.at(taker);
        rep.inputDrift = inputs.drift.metrics();
        auto shared = inputStatistics.find(taker);
        if (shared == inputStatistics.end())
            shared = inputStatistics.emplace(taker, inputs.channels.finish(99.0)).first;
        rep.input = shared->second;
        rep.input.quantizedHistogram = a.channels.quantizedHistogram(rep.input.histogram);
        if (!rep.input.absmax.empty()) {
            rep.inputAbsmax = *std::max_element(rep.input.absmax.begin(), rep.input.absmax.end());
            const double med = median(rep.input.absmax);
            rep.outlierScore = med > 0 ? rep.inputAbsmax / med : 0.0;
            rep.maxKurtosis =
                *std::max_element(rep.input.kurtosis.begin(), rep.input.kurtosis.end());
        }
    }
}

} // namespace qs
