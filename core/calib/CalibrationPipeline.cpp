#include "calib/CalibrationPipeline.h"

#include "analysis/ChannelStatsAccumulator.h"
#include "analysis/ErrorAccumulator.h"
#include "calib/BlockQuantHook.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace qs {

namespace {

std::string kindOf(const std::string& name) {
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

// Analysis state of one linear across the batches of its block.
struct LayerAnalysis {
    ErrorAccumulator local, accumulated, inputQuant, drift;
    ChannelStatsAccumulator channels;
};

double median(std::vector<float> v) {
    if (v.empty())
        return 0.0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

} // namespace

CalibrationPipeline::CalibrationPipeline(DecoderModel& model, PipelineOptions options)
    : m_model(model), m_options(std::move(options)) {
    if (m_options.unfitPolicy != "error" && m_options.unfitPolicy != "skip")
        throw Error("recipe", "unfit_policy",
                    "unknown policy '" + m_options.unfitPolicy + "' (error or skip)");
}

std::string CalibrationPipeline::unfitReason(const quant::QuantScheme& scheme, int64_t in) {
    // Weights group along the input axis; so do per-group activation specs. MX/NVFP4-style
    // fixed blocks are zero-padded as Quark does, so only free group sizes must divide.
    auto check = [&](const quant::QuantSpec& s, const char* what) -> std::string {
        if (s.granularity != quant::Granularity::PerGroup || quant::hasFixedBlock(s.dtype))
            return {};
        if (s.groupSize > 0 && in % s.groupSize != 0)
            return std::string(what) + " group size " + std::to_string(s.groupSize) +
                   " does not divide in_features " + std::to_string(in);
        return {};
    };
    std::string r = check(scheme.weight, "weight");
    if (r.empty() && scheme.weightPreStage)
        r = check(*scheme.weightPreStage, "weight");
    if (r.empty() && scheme.input)
        r = check(*scheme.input, "input");
    return r;
}

void CalibrationPipeline::checkShapes(const ModuleNode& tree) {
    std::vector<const ModuleNode*> linears;
    tree.collect("linear", linears);
    std::string problems;
    for (const ModuleNode* n : linears) {
        if (n->blockIndex < 0 || n->shape.size() != 2 || !m_options.schemeFor)
            continue;
        const auto scheme = m_options.schemeFor(n->name, kindOf(n->name));
        if (!scheme)
            continue;
        const std::string reason = unfitReason(*scheme, n->shape[1]);
        if (reason.empty())
            continue;
        m_unfit[n->name] = reason;
        problems += "\n  " + n->name + ": " + reason;
    }
    if (!problems.empty() && m_options.unfitPolicy == "error")
        throw Error("recipe", "layers",
                    "these layers do not fit their scheme (exclude them, change their scheme, or "
                    "set unfit_policy \"skip\"):" +
                        problems);
}

PipelineResult CalibrationPipeline::run(const at::Tensor& calibration, const at::Tensor& evaluation,
                                        const PipelineProgress& progress, const BlockSink& sink) {
    PipelineResult result;
    const at::Device device = m_model.compute().device;
    const int64_t L = calibration.size(1);
    const int64_t batch = std::max<int64_t>(1, m_options.maxBatchTokens / L);
    const bool analyze = m_options.analyze;
    const int blocks = m_model.numBlocks();

    const ForwardContext calibCtx = m_model.makeContext(L);
    at::Tensor hiddenQ = m_model.embed(calibration.to(device));
    at::Tensor hiddenRef = analyze ? hiddenQ.clone() : at::Tensor();
    ForwardContext evalCtx;
    at::Tensor hiddenEval;
    if (evaluation.defined()) {
        evalCtx = m_model.makeContext(evaluation.size(1));
        hiddenEval = m_model.embed(evaluation.to(device));
    }
    const int64_t evalBatch =
        evaluation.defined() ? std::max<int64_t>(1, m_options.maxBatchTokens / evaluation.size(1))
                             : 1;

    auto report = [&](int block, double within, const std::string& what) {
        if (progress && !progress((block + within) / double(blocks),
                                  "block " + std::to_string(block) + ": " + what))
            throw Cancelled();
    };
    // Runs `fn(begin, count)` over row batches of a [N, ...] tensor, checking for cancellation.
    auto batches = [&](int64_t rows, int64_t size, int block, double from, double to,
                       const std::string& what, const std::function<void(int64_t, int64_t)>& fn) {
        for (int64_t b = 0; b < rows; b += size) {
            report(block, from + (to - from) * double(b) / double(rows), what);
            fn(b, std::min(size, rows - b));
        }
    };

    for (int bi = 0; bi < blocks; ++bi) {
        const auto t0 = std::chrono::steady_clock::now();
        report(bi, 0.0, "loading");
        std::unique_ptr<DecoderBlock> block = m_model.loadBlock(bi);
        std::vector<LinearLayer*> linears = block->linears();

        // Quantizers and quantized weights for this block.
        std::vector<std::unique_ptr<LinearQuantizer>> owned;
        std::map<std::string, LinearQuantizer*> quantizers;
        std::map<std::string, LayerAnalysis> analysis;
        std::vector<LayerReport> reports;
        for (LinearLayer* l : linears) {
            LayerReport rep;
            rep.name = l->name;
            rep.kind = l->kind;
            rep.block = bi;
            rep.shape = {l->weight.size(0), l->weight.size(1)};
            std::optional<quant::QuantScheme> scheme =
                m_options.schemeFor ? m_options.schemeFor(l->name, l->kind) : std::nullopt;
            std::optional<quant::QuantSpec> out =
                m_options.outputSpecFor ? m_options.outputSpecFor(l->name, l->kind) : std::nullopt;
            auto unfit = m_unfit.find(l->name);
            if (scheme && unfit == m_unfit.end()) {
                const std::string reason = unfitReason(*scheme, l->weight.size(1));
                if (!reason.empty()) {
                    if (m_options.unfitPolicy == "error")
                        throw Error("recipe", l->name, reason);
                    unfit = m_unfit.emplace(l->name, reason).first;
                }
            }
            if (scheme && unfit != m_unfit.end()) {
                rep.note = "not quantized: " + unfit->second;
                result.skipped.push_back(l->name + ": " + unfit->second);
                scheme.reset();
            } else if (!scheme && !out) {
                rep.note = "excluded";
            }
            if (scheme)
                rep.scheme = scheme->name.empty() ? scheme->weight.summary() : scheme->name;
            auto q = std::make_unique<LinearQuantizer>(l->name, scheme, out);
            rep.quantized = q->quantized();
            q->quantizeWeight(*l);
            if (scheme && analyze) {
                ErrorAccumulator w;
                w.add(q->quantizedWeight(), q->referenceWeight());
                rep.weight = w.metrics();
                rep.weightHistogram = histogramOf(q->referenceWeight(), 128);
                rep.weightQuantizedHistogram = histogramOf(
                    q->quantizedWeight(), 128, rep.weightHistogram.lo, rep.weightHistogram.hi);
            }
            if (rep.quantized)
                quantizers[l->name] = q.get();
            owned.push_back(std::move(q));
            reports.push_back(std::move(rep));
            if (analyze)
                analysis[l->name];
        }
        auto setWeights = [&](bool quantized) {
            for (size_t i = 0; i < linears.size(); ++i)
                linears[i]->weight =
                    quantized ? owned[i]->quantizedWeight() : owned[i]->referenceWeight();
        };

        BlockQuantHook hook(quantizers);
        ForwardContext ctx = calibCtx;
        ctx.hook = &hook;
        const int64_t N = hiddenQ.size(0);

        // 1. Static quantizers observe the block's activations (quantized weights, quantized
        //    upstream), then freeze.
        setWeights(true);
        bool observe = false;
        for (auto& q : owned)
            observe = observe || q->needsObservation();
        if (observe) {
            hook.setMode(BlockQuantHook::Mode::Observe);
            batches(N, batch, bi, 0.05, 0.4, "observing",
                    [&](int64_t b, int64_t n) { block->forward(hiddenQ.narrow(0, b, n), ctx); });
            for (auto& q : owned)
                q->freeze();
        }

        // 2. Quantized outputs become the next block's inputs; with analysis, the full-precision
        //    block runs beside it on the reference stream and each linear is compared.
        at::Tensor nextQ = at::empty_like(hiddenQ);
        at::Tensor nextRef = analyze ? at::empty_like(hiddenRef) : at::Tensor();
        batches(N, batch, bi, 0.4, 0.9, "quantizing", [&](int64_t b, int64_t n) {
            std::map<std::string, at::Tensor> refIn, refOut;
            if (analyze) {
                setWeights(false);
                hook.setMode(BlockQuantHook::Mode::Reference);
                hook.setCapture(true);
                nextRef.narrow(0, b, n).copy_(block->forward(hiddenRef.narrow(0, b, n), ctx));
                refIn = hook.inputs();
                refOut = hook.outputs();
                setWeights(true);
            }
            hook.setMode(BlockQuantHook::Mode::Apply);
            hook.setCapture(analyze);
            nextQ.narrow(0, b, n).copy_(block->forward(hiddenQ.narrow(0, b, n), ctx));
            if (!analyze)
                return;
            for (size_t i = 0; i < linears.size(); ++i) {
                const std::string& name = linears[i]->name;
                LayerAnalysis& a = analysis[name];
                const LinearQuantizer& q = *owned[i];
                const at::Tensor& xRef = refIn.at(name);
                a.channels.add(xRef);
                a.accumulated.add(hook.outputs().at(name), refOut.at(name));
                a.drift.add(hook.inputs().at(name), xRef);
                if (!q.quantized())
                    continue;
                const at::Tensor xq = q.quantizeInput(xRef);
                if (q.hasInputQuantizer()) {
                    a.inputQuant.add(xq, xRef);
                    a.channels.addQuantized(xq);
                }
                const at::Tensor local =
                    q.quantizeOutput(at::linear(xq, q.quantizedWeight(), linears[i]->bias));
                a.local.add(local, refOut.at(name));
            }
        });
        hook.setCapture(false);

        // 3. Evaluation windows go through the quantized block too.
        if (hiddenEval.defined()) {
            ForwardContext ectx = evalCtx;
            ectx.hook = &hook;
            hook.setMode(BlockQuantHook::Mode::Apply);
            batches(hiddenEval.size(0), evalBatch, bi, 0.9, 0.97, "evaluating",
                    [&](int64_t b, int64_t n) {
                        hiddenEval.narrow(0, b, n).copy_(
                            block->forward(hiddenEval.narrow(0, b, n), ectx));
                    });
        }

        hiddenQ = nextQ;
        if (analyze)
            hiddenRef = nextRef;
        report(bi, 0.97, "finishing");
        if (sink)
            sink(bi, *block);
        for (LayerReport& rep : reports) {
            if (analyze) {
                LayerAnalysis& a = analysis[rep.name];
                rep.outputLocal = a.local.metrics();
                rep.outputAccumulated = a.accumulated.metrics();
                rep.inputQuantization = a.inputQuant.metrics();
                rep.inputDrift = a.drift.metrics();
                rep.input = a.channels.finish();
                if (!rep.input.absmax.empty()) {
                    rep.inputAbsmax =
                        *std::max_element(rep.input.absmax.begin(), rep.input.absmax.end());
                    const double med = median(rep.input.absmax);
                    rep.outlierScore = med > 0 ? rep.inputAbsmax / med : 0.0;
                    rep.maxKurtosis =
                        *std::max_element(rep.input.kurtosis.begin(), rep.input.kurtosis.end());
                }
            }
        }
        if (m_options.onBlockReports)
            m_options.onBlockReports(bi, reports);
        for (LayerReport& rep : reports)
            result.layers.push_back(std::move(rep));
        result.blockSeconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } // the block and its quantizers are released here

    if (hiddenEval.defined()) {
        const int64_t W = evaluation.size(0), T = evaluation.size(1);
        const at::Tensor ids = evaluation.to(device);
        for (int64_t b = 0; b < W; b += evalBatch) {
            if (progress && !progress(1.0, "scoring evaluation windows"))
                throw Cancelled();
            const int64_t n = std::min(evalBatch, W - b);
            const at::Tensor logits = m_model.logits(hiddenEval.narrow(0, b, n));
            const at::Tensor logp = at::log_softmax(logits.narrow(1, 0, T - 1), -1);
            const at::Tensor target = ids.narrow(0, b, n).narrow(1, 1, T - 1).unsqueeze(-1);
            result.evalNllSum -= logp.gather(-1, target).to(at::kDouble).sum().item<double>();
        }
        result.evalPredicted = W * (T - 1);
    }
    return result;
}

} // namespace qs
