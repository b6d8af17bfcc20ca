#include "algo/GptqTransform.h"

#include "calib/CalibrationShards.h"
#include "dist/RankGroup.h"
#include "eval/WindowShards.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

namespace qs::algo {

namespace {

const char* solverName(HessianSolver solver) {
    switch (solver) {
    case HessianSolver::Gptaq:
        return "gptaq";
    case HessianSolver::Qronos:
        return "qronos";
    case HessianSolver::Gptq:
        break;
    }
    return "gptq";
}

// The name a refusal gives (Quark's spelling of each algorithm).
const char* displayName(HessianSolver solver) {
    switch (solver) {
    case HessianSolver::Gptaq:
        return "GPTAQ";
    case HessianSolver::Qronos:
        return "Qronos";
    case HessianSolver::Gptq:
        break;
    }
    return "GPTQ";
}

} // namespace

GptqTransform::GptqTransform(const nlohmann::json& params, const std::string& source,
                             HessianSolver solver)
    : m_solver(solver), m_source(source) {
    // The catalog has validated names, types and ranges and holds the defaults
    // (AlgorithmCatalog.cpp).
    const std::string algorithm = solverName(solver);
    auto param = [&](const char* name) { return algorithmParam(algorithm, params, name); };
    m_options.blockSize = param("block_size").get<int64_t>();
    m_options.descAct = param("desc_act").get<bool>();
    m_options.staticGroups = param("static_groups").get<bool>();
    if (solver == HessianSolver::Qronos) {
        m_qronos.blockSize = m_options.blockSize;
        m_qronos.descAct = m_options.descAct;
        m_qronos.staticGroups = m_options.staticGroups;
        m_qronos.alpha = param("alpha").get<double>();
        m_qronos.beta = param("beta").get<double>();
    } else {
        m_options.dampPercent = param("damp_percent").get<double>();
        if (solver == HessianSolver::Gptaq)
            m_options.alpha = param("alpha").get<double>();
    }
    if (params.contains("inside_layer_modules") && params["inside_layer_modules"].is_array())
        for (const auto& m : params["inside_layer_modules"])
            m_modules.push_back(m.get<std::string>());
}

bool GptqTransform::covers(const std::string& layer) const {
    if (m_modules.empty())
        return true;
    for (const std::string& m : m_modules)
        if (layer.size() >= m.size() && layer.compare(layer.size() - m.size(), m.size(), m) == 0 &&
            (layer.size() == m.size() || layer[layer.size() - m.size() - 1] == '.'))
            return true;
    return false;
}

std::string GptqTransform::name() const {
    return solverName(m_solver);
}

void GptqTransform::checkModel(const ModelConfig& config) const {
    // Quark replays the quantized pass's routing in the full-precision pass so that the two
    // passes' expert inputs are the same tokens row for row; without that replay the cross
    // term would pair different tokens.
    if (m_solver != HessianSolver::Gptq && config.moe.numExperts > 0)
        throw Error(m_source, "algorithms." + name(),
                    name() + " on a mixture-of-experts model needs the quantized pass's expert "
                             "routing replayed in the full-precision pass (as Quark does), which "
                             "Quantscope does not do yet; use gptq here");
}

GptqResult GptqTransform::solve(const at::Tensor& weight, const at::Tensor& hessian,
                                const at::Tensor& cross, const quant::QuantSpec& spec,
                                const std::string& layer,
                                const std::function<void(double)>& progress) const {
    switch (m_solver) {
    case HessianSolver::Gptaq:
        return gptaqQuantize(weight, hessian, cross, spec, m_options, layer, progress);
    case HessianSolver::Qronos:
        return qronosQuantize(weight, hessian, cross, spec, m_qronos, layer, progress);
    case HessianSolver::Gptq:
        break;
    }
    return gptqQuantize(weight, hessian, spec, m_options, layer, progress);
}

void GptqTransform::checkLayer(const std::string& layer, const quant::QuantScheme& scheme) const {
    if (covers(layer) && !scheme.weightPreStage)
        checkGptqSpec(scheme.weight, layer, displayName(m_solver));
}

namespace {

// Every linear's inputs over one forward of the block across its calibration stream, as
// [rows, in_features] (what the capture pass records), with the block's weights as they are now.
class InputCaptureHook : public LinearHook {
public:
    std::map<std::string, std::vector<at::Tensor>> inputs;
    at::Tensor onInput(const LinearLayer& layer, const at::Tensor& x) override {
        inputs[layer.name].push_back(x.reshape({-1, x.size(-1)}));
        return x;
    }
};

std::map<std::string, std::vector<at::Tensor>> captureBlockInputs(BlockTransformInput& input,
                                                                  const at::Tensor& stream) {
    InputCaptureHook hook;
    ForwardContext ctx = *input.context;
    ctx.hook = &hook;
    const int64_t size = windowsPerBatch(input.maxBatchTokens, stream.size(1));
    for (int64_t b = 0; b < stream.size(0); b += size)
        input.block.forward(stream.narrow(0, b, std::min(size, stream.size(0) - b)), ctx);
    return std::move(hook.inputs);
}

// 2/rows times the sum of the batches' float64 partial sums `parts` (over `rows` rows), as
// float32: with `shards`, every rank's batches added in shard order (what one process does with
// all the batches, so the bits are the same at any number of ranks); without, in batch order.
at::Tensor scaledSum(const CalibrationShards* shards, const std::vector<at::Tensor>& parts,
                     int64_t rows, const std::string& layer) {
    if (shards)
        return gptqHessianFromSum(sumInShardOrder(*shards, parts, layer),
                                  sumOverRanks(*shards, rows), layer);
    at::Tensor sum;
    for (const at::Tensor& part : parts)
        sum = sum.defined() ? sum + part : part;
    return gptqHessianFromSum(sum, rows, layer);
}

// The Hessian of every rank's batches: each batch's partial sum, added in shard order (what
// gptqHessian does with one process's batches, so the bits are the same).
at::Tensor hessianOverRanks(const CalibrationShards& shards, const std::vector<at::Tensor>& xs,
                            int64_t inFeatures, const std::string& layer) {
    std::vector<at::Tensor> parts;
    int64_t rows = 0;
    for (const at::Tensor& x : xs) {
        parts.push_back(gptqHessianPart(x, inFeatures, layer));
        rows += x.size(0);
    }
    return scaledSum(&shards, parts, rows, layer);
}

// GPTAQ's or Qronos' cross term of the full-precision rows `xs` and the quantized rows `xqs`
// (batch for batch the same tokens), scaled like the Hessian (2/rows); over ranks as above.
at::Tensor crossTerm(HessianSolver solver, const CalibrationShards* shards,
                     const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& xqs,
                     int64_t inFeatures, const std::string& layer) {
    if (xs.size() != xqs.size())
        throw Error(layer, "inputs",
                    std::to_string(xs.size()) + " full-precision batches against " +
                        std::to_string(xqs.size()) + " quantized ones");
    std::vector<at::Tensor> parts;
    int64_t rows = 0;
    for (size_t b = 0; b < xs.size(); ++b) {
        parts.push_back(solver == HessianSolver::Gptaq
                            ? gptaqCrossPart(xs[b], xqs[b], inFeatures, layer)
                            : qronosCrossPart(xs[b], xqs[b], inFeatures, layer));
        rows += xs[b].size(0);
    }
    return scaledSum(shards, parts, rows, layer);
}

// The solve rank `owner` made, on every rank (on `device`).
GptqResult shareResult(const CalibrationShards& shards, int owner, const GptqResult& mine,
                       const at::Device& device) {
    const quant::QuantParams& p = mine.codes.params;
    const std::vector<at::Tensor> sent = broadcastFrom(
        shards, owner,
        {mine.codes.codes, p.scale, p.zeroPoint, p.globalScale, p.scaleCodes, mine.dequantized,
         at::tensor({mine.dampingUsed, double(int(mine.codes.dtype))}, at::kDouble)});
    const auto on = [&device](const at::Tensor& t) { return t.defined() ? t.to(device) : t; };
    GptqResult r;
    r.codes.codes = on(sent[0]);
    r.codes.params.scale = on(sent[1]);
    r.codes.params.zeroPoint = on(sent[2]);
    r.codes.params.globalScale = on(sent[3]);
    r.codes.params.scaleCodes = on(sent[4]);
    r.dequantized = on(sent[5]);
    r.dampingUsed = sent[6][0].item<double>();
    r.codes.dtype = quant::DataType(int(sent[6][1].item<double>()));
    return r;
}

bool sameInputs(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].is_same(b[i]) && (a[i].sizes() != b[i].sizes() || !at::equal(a[i], b[i])))
            return false;
    return true;
}

} // namespace

void GptqTransform::apply(BlockTransformInput& input) {
    const std::vector<LinearLayer*> linears = input.block.linears();
    const size_t layers = input.plans.size();
    // The linears GPTQ quantizes, in block order, in runs that read the same input (q, k, v;
    // gate, up): a run shares one Hessian.
    struct Job {
        size_t plan;
        LinearLayer* linear;
    };
    std::vector<std::vector<Job>> runs;
    const std::vector<at::Tensor>* previous = nullptr;
    for (size_t k = 0; k < layers; ++k) {
        LayerPlan& plan = input.plans[k];
        if (!plan.scheme || plan.scheme->weightPreStage || !covers(plan.name))
            continue;
        LinearLayer* linear = nullptr;
        for (LinearLayer* l : linears)
            if (l->name == plan.name)
                linear = l;
        if (!linear)
            throw Error(m_source, "algorithms." + name(),
                        "no linear named " + plan.name + " in its block");
        const auto found = input.inputs.find(plan.name);
        if (found == input.inputs.end())
            throw Error(m_source, "algorithms." + name(),
                        "no calibration inputs were captured for " + plan.name);
        if (previous == nullptr || !sameInputs(*previous, found->second))
            runs.emplace_back();
        runs.back().push_back({k, linear});
        previous = &found->second;
    }

    // True-sequential, as Quark runs GPTQ: each linear's Hessian comes from its inputs with the
    // linears before it in the block already quantized (o_proj sees attention computed with
    // the quantized q/k/v, down_proj the quantized gate/up). The block is run again only where
    // an input changes, i.e. between runs. The quantized weights stand in the block while the
    // loop runs; the full-precision ones are put back at the end (the plans carry both).
    const bool sequential = input.stream.defined() && input.context != nullptr;
    // GPTAQ's and Qronos' full-precision inputs: the reference stream through the block's
    // original weights, before any of them is swapped for its quantized one.
    std::map<std::string, std::vector<at::Tensor>> reference;
    if (m_solver != HessianSolver::Gptq && !runs.empty()) {
        if (!input.referenceStream.defined() || input.context == nullptr)
            throw Error(m_source, "algorithms." + name(),
                        name() + " needs calibration data (it compares the full-precision "
                                 "model's inputs with the quantized model's)");
        reference = captureBlockInputs(input, input.referenceStream);
    }
    std::vector<std::pair<LinearLayer*, at::Tensor>> swapped;
    std::map<std::string, std::vector<at::Tensor>> current;
    bool quantizedSinceCapture = false;
    struct Restore {
        std::vector<std::pair<LinearLayer*, at::Tensor>>& swapped;
        ~Restore() {
            for (auto& [layer, weight] : swapped)
                layer->weight = weight;
        }
    } restore{swapped};
    // Spread over ranks, the linears of a run are solved by ranks in turn (the j-th by rank j mod
    // N) and each result goes to the others: the same H and weight give the same codes on any
    // rank, so the bytes do not change, only who computes them.
    const int ranks = input.shards ? input.shards->group->size() : 1;
    const int rank = input.shards ? input.shards->group->rank() : 0;
    for (const std::vector<Job>& run : runs) {
        if (sequential && quantizedSinceCapture) {
            current = captureBlockInputs(input, input.stream);
            quantizedSinceCapture = false;
        }
        const std::string& first = input.plans[run.front().plan].name;
        const auto recaptured = current.find(first);
        const std::vector<at::Tensor>& xs =
            recaptured != current.end() ? recaptured->second : input.inputs.at(first);
        const int64_t in = run.front().linear->weight.size(1);
        const at::Tensor h = input.shards ? hessianOverRanks(*input.shards, xs, in, first)
                                          : gptqHessian(xs, in, first);
        const at::Tensor cross =
            m_solver == HessianSolver::Gptq
                ? at::Tensor()
                : crossTerm(m_solver, input.shards, reference.at(first), xs, in, first);
        std::vector<GptqResult> results(run.size());
        for (size_t j = 0; j < run.size(); ++j) {
            LayerPlan& plan = input.plans[run[j].plan];
            // Progress per layer and per block of columns: where a cancelled run stops.
            const auto report = [&](double within) {
                if (input.report)
                    input.report((double(run[j].plan) + within) / double(layers), plan.name);
            };
            report(0.0);
            if (int(j % size_t(ranks)) == rank)
                results[j] =
                    solve(run[j].linear->weight, h, cross, plan.scheme->weight, plan.name, report);
        }
        if (ranks > 1)
            for (size_t j = 0; j < run.size(); ++j)
                results[j] = shareResult(*input.shards, int(j % size_t(ranks)), results[j],
                                         run[j].linear->weight.device());
        for (size_t j = 0; j < run.size(); ++j) {
            LayerPlan& plan = input.plans[run[j].plan];
            LinearLayer* linear = run[j].linear;
            const at::Tensor w = linear->weight;
            plan.weight.reference = w;
            plan.weight.dequantized = results[j].dequantized.to(w.scalar_type());
            plan.weight.codes = results[j].codes;
            plan.transforms.push_back(name());
            if (sequential) {
                swapped.emplace_back(linear, w);
                linear->weight = plan.weight.dequantized;
                quantizedSinceCapture = true;
            }
        }
    }
}

} // namespace qs::algo
