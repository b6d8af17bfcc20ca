#include "calib/CalibrationPasses.h"

#include "calib/CalibrationShards.h"
#include "calib/PlanReport.h"
#include "eval/WindowShards.h"
#include "model/ForwardThreads.h"
#include "util/Error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>

namespace qs {

void BlockProgress::report(int block, double within, const std::string& what) const {
    if (m_progress && !m_progress((block + within) / double(std::max(1, m_blocks)),
                                  "block " + std::to_string(block) + ": " + what))
        throw Cancelled();
}

void BlockProgress::reportOverall(double fraction, const std::string& what) const {
    if (m_progress && !m_progress(fraction, what))
        throw Cancelled();
}

BlockRun::BlockRun(DecoderBlock& b, std::vector<LayerPlan>& p, BlockQuantHook& h,
                   const BlockProgress& pr, int64_t maxTokens, PlanFilter f)
    : index(b.index()), block(&b), linears(b.linears()), plans(&p), hook(&h), progress(&pr),
      maxBatchTokens(maxTokens), filter(std::move(f)) {
    if (linears.size() != plans->size())
        throw Error("block " + std::to_string(index), "plans",
                    "the plans do not match the block's linears");
}

namespace pass {

namespace {

int64_t batchRows(const BlockRun& run, const at::Tensor& stream) {
    return windowsPerBatch(run.maxBatchTokens, stream.size(1));
}

} // namespace

void setWeights(BlockRun& run, bool quantized) {
    const std::vector<LayerPlan>& plans = *run.plans;
    for (size_t i = 0; i < run.linears.size(); ++i) {
        // Before weight quantization (capture, transforms) the plans hold no weights yet and
        // the linears keep the full-precision weights they were loaded (or transformed) with.
        if (!plans[i].weight.reference.defined())
            continue;
        const bool q = quantized && (!run.filter || run.filter(plans[i]).weightAndInput);
        run.linears[i]->weight = q ? plans[i].weight.dequantized : plans[i].weight.reference;
    }
}

namespace {

// The batch loop of every forward pass; `captures`, when given, receives each batch's captures.
at::Tensor runBatches(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx,
                      BlockQuantHook::Mode mode, bool quantizedWeights, double from, double to,
                      const std::string& what, std::vector<BatchCapture>* captures) {
    setWeights(run, quantizedWeights);
    run.hook->setMode(mode);
    ForwardContext hooked = ctx;
    hooked.hook = run.hook;
    const int64_t rows = stream.size(0), size = batchRows(run, stream);
    // Small models: the whole batch loop on one thread, not only the block forward, or each
    // batch's copy below wakes a second OpenMP worker that then spins through the next forward.
    const SmallForwardGuard threads(size * stream.size(1), stream.size(-1),
                                    /*besideOwnBlasPool=*/false);
    at::Tensor out = at::empty_like(stream);
    for (int64_t b = 0; b < rows; b += size) {
        run.progress->report(run.index, from + (to - from) * double(b) / double(rows), what);
        const int64_t n = std::min(size, rows - b);
        run.hook->setCapture(captures != nullptr);
        out.narrow(0, b, n).copy_(run.block->forward(stream.narrow(0, b, n), hooked));
        if (captures)
            captures->push_back({run.hook->inputs(), run.hook->outputs()});
    }
    run.hook->setCapture(false);
    return out;
}

} // namespace

at::Tensor forward(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx,
                   BlockQuantHook::Mode mode, bool quantizedWeights, double from, double to,
                   const std::string& what) {
    return runBatches(run, stream, ctx, mode, quantizedWeights, from, to, what, nullptr);
}

std::map<std::string, std::vector<at::Tensor>>
captureInputs(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx) {
    std::map<std::string, std::vector<at::Tensor>> captured;
    run.hook->setCollector(&captured);
    try {
        forward(run, stream, ctx, BlockQuantHook::Mode::Reference, false, 0.0, 0.1, "capturing");
    } catch (...) {
        run.hook->setCollector(nullptr);
        throw;
    }
    run.hook->setCollector(nullptr);
    return captured;
}

namespace {

std::vector<float> toFloats(const at::Tensor& t) {
    if (!t.defined())
        return {};
    const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// What an analysed run keeps before transform `t` runs (CalibrationPasses.h, pass 2); notes,
// per plan, the number of transforms it had when its ranges were taken (else SIZE_MAX).
void keepBefore(BlockRun& run, const BlockTransform& t, const BlockTransformInput& in,
                const std::map<std::string, std::vector<at::Tensor>>& captured,
                std::vector<size_t>& rangesTakenAt) {
    std::vector<LayerPlan>& plans = *run.plans;
    const std::string label = t.rangesLabel();
    for (size_t i = 0; i < plans.size(); ++i) {
        LayerPlan& p = plans[i];
        const at::Tensor& w = run.linears[i]->weight;
        if (t.choosesCodes() && p.scheme && !p.baseline.weight.defined()) {
            // The transforms replace weights with new tensors rather than writing into them,
            // so holding this one keeps the weight as it is now.
            p.baseline.weight = w;
            p.baseline.transformsBefore = p.transforms.size();
        }
        const auto found = captured.find(p.name);
        if (!label.empty() && !p.report.ranges.valid() && found != captured.end() &&
            !found->second.empty()) {
            at::Tensor inputs, weight;
            t.rangesBefore(in, *run.linears[i], found->second, inputs, weight);
            p.report.ranges.transform = label;
            p.report.ranges.inputAbsmaxBefore = toFloats(inputs);
            p.report.ranges.weightAbsmaxBefore = toFloats(weight);
            rangesTakenAt[i] = p.transforms.size();
        }
    }
}

// Drops what keepBefore took for the layers no transform changed after all.
void dropUnchanged(BlockRun& run, const std::vector<size_t>& rangesTakenAt) {
    for (size_t i = 0; i < run.plans->size(); ++i) {
        LayerPlan& p = (*run.plans)[i];
        if (p.baseline.weight.defined() && p.transforms.size() == p.baseline.transformsBefore)
            p.baseline = {};
        if (p.report.ranges.valid() && p.transforms.size() == rangesTakenAt[i])
            p.report.ranges = {};
    }
}

} // namespace

void applyTransforms(BlockRun& run, const std::vector<std::shared_ptr<BlockTransform>>& transforms,
                     const TransformInputs& observed, const TransformInputs& quantized,
                     const ModelConfig& config, const ForwardContext& ctx,
                     const Checkpoint* checkpoint) {
    std::vector<size_t> rangesTakenAt(run.plans->size(), SIZE_MAX);
    for (size_t i = 0; i < transforms.size(); ++i) {
        const auto& t = transforms[i];

        // The transforms share the block's span 0.1..0.15 (capture before, weights after).
        const double from = 0.1 + 0.05 * double(i) / double(transforms.size());
        const double span = 0.05 / double(transforms.size());
        run.progress->report(run.index, from, t->name());
        const bool wantsQuantized = t->stream() != BlockTransform::Stream::Observed;
        const TransformInputs& inputs = wantsQuantized ? quantized : observed;
        const auto& captured = inputs.captured;
        BlockTransformInput in{*run.block, *run.plans, captured};
        in.config = &config;
        in.stream = inputs.stream;
        in.context = &ctx;
        in.maxBatchTokens = run.maxBatchTokens;
        if (t->stream() == BlockTransform::Stream::QuantizedAndReference)
            in.referenceStream = quantized.reference;
        const BlockProgress* progress = run.progress;
        const int index = run.index;
        const std::string name = t->name();
        in.report = [progress, index, from, span, name](double within, const std::string& what) {
            progress->report(index, from + span * within, name + ": " + what);
        };
        in.checkpoint = checkpoint;
        in.shards = run.shards;
        if (run.analyse)
            keepBefore(run, *t, in, captured, rangesTakenAt);
        t->apply(in);
        // A transform that rescaled weights leaves them in the block's linears (reference
        // weights of the weight pass); the next transform sees them.
    }
    if (run.analyse)
        dropUnchanged(run, rangesTakenAt);
}

void quantizeWeights(BlockRun& run) {
    std::vector<LayerPlan>& plans = *run.plans;
    run.progress->report(run.index, 0.15, "quantizing weights");
    for (size_t i = 0; i < plans.size(); ++i) {
        LayerPlan& p = plans[i];
        // A transform that chooses the codes itself (GPTQ) has filled the weight in already.
        if (!p.weight.dequantized.defined())
            p.quantizeWeight(run.linears[i]->weight);
        p.keepRoundToNearest(); // only where an analysed run kept a baseline
        if (run.releaseFloatWeights && p.releaseFloatWeights())
            run.linears[i]->weight = at::Tensor(); // setWeights skips it (no reference)

        p.createActivationQuantizers();
        fillReportHeader(p);
    }
}

at::Tensor observeActivations(BlockRun& run, const at::Tensor& stream, const ForwardContext& ctx,
                              bool quantizedWeights, std::vector<BatchCapture>* captures) {
    return runBatches(run, stream, ctx, BlockQuantHook::Mode::Observe, quantizedWeights, 0.2, 0.5,
                      "observing", captures);
}

void freeze(BlockRun& run) {
    if (run.shards)
        mergeObservers(*run.shards, *run.plans);
    for (LayerPlan& p : *run.plans)
        p.freeze();
}

void analyse(BlockRun& run, const at::Tensor& refStream, const at::Tensor& quantStream,
             const ForwardContext& ctx, std::vector<LayerAnalyzer>& analyzers,
             const std::vector<BatchCapture>& refCaptures, at::Tensor& nextRef,
             at::Tensor& nextQuant) {
    ForwardContext hooked = ctx;
    hooked.hook = run.hook;
    const int64_t rows = quantStream.size(0), size = batchRows(run, quantStream);
    const bool haveRefs = !refCaptures.empty();
    if (!haveRefs)
        nextRef = at::empty_like(refStream);
    nextQuant = at::empty_like(quantStream);
    BlockQuantHook& hook = *run.hook;
    for (int64_t b = 0, batch = 0; b < rows; b += size, ++batch) {
        run.progress->report(run.index, 0.5 + 0.4 * double(b) / double(rows), "analysing");
        const int64_t n = std::min(size, rows - b);
        BatchCapture ref;
        if (haveRefs) {
            ref = refCaptures.at(size_t(batch));
        } else {
            setWeights(run, false);
            hook.setMode(BlockQuantHook::Mode::Reference);
            hook.setCapture(true);
            nextRef.narrow(0, b, n).copy_(run.block->forward(refStream.narrow(0, b, n), hooked));
            ref = {hook.inputs(), hook.outputs()};
        }
        setWeights(run, true);
        hook.setMode(BlockQuantHook::Mode::Apply);
        hook.setCapture(true);
        nextQuant.narrow(0, b, n).copy_(run.block->forward(quantStream.narrow(0, b, n), hooked));
        LayerAnalyzer& analyzer = analyzers.at(analyzers.size() == 1 ? 0 : size_t(batch));
        analyzer.addBatch(*run.plans, run.linears, ref.inputs, ref.outputs, hook.inputs(),
                          hook.outputs());
        analyzer.addBlockInput(refStream.narrow(0, b, n));
    }
    hook.setCapture(false);
}

} // namespace pass

} // namespace qs
