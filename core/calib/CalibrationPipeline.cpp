#include "calib/CalibrationPipeline.h"

#include "calib/ResumeState.h"
#include "eval/Perplexity.h"
#include "eval/WindowShards.h"
#include "model/DeviceRunAhead.h"
#include "util/Error.h"
#include "util/LargeTensor.h"

#include <chrono>

namespace qs {

namespace {

// Free heap a run without an export keeps between blocks: a block's activations (a 7B model's,
// in batches of 2048 tokens, are well below it) reuse it; beyond it the heap is trimmed.
constexpr size_t kFreeHeapKept = size_t(1) << 30;

// Bytes of every linear's input and output over the whole calibration stream, in the stream's
// dtype: what keeping one pass's captures for the analysis costs.
int64_t captureBytes(const std::vector<LayerPlan>& plans, const at::Tensor& stream) {
    if (!stream.defined())
        return 0;
    int64_t perToken = 0;
    for (const LayerPlan& p : plans)
        perToken += p.shape[0] + p.shape[1];
    return perToken * stream.size(0) * stream.size(1) * int64_t(stream.element_size());
}

} // namespace

int64_t batchTokensFor(const at::Device& device) {
    return device.is_cpu() ? 2048 : 8192;
}

CalibrationPipeline::CalibrationPipeline(DecoderModel& model, LayerPlanner& planner,
                                         PipelineOptions options)
    : m_model(model), m_planner(planner), m_options(std::move(options)) {}

PipelineResult CalibrationPipeline::run(const at::Tensor& calibration, const at::Tensor& evaluation,
                                        const PipelineProgress& progressFn, const BlockSink& sink) {
    PipelineResult result;
    const at::Device device = m_model.compute().device;
    const int blocks = m_model.numBlocks();
    const BlockProgress progress(progressFn, blocks);
    const bool analyze = m_options.analyze;
    const bool floatCalibration = m_options.mode == CalibrationMode::Float;
    // The inputs each stream's transforms capture; an analysed run also captures for the
    // transforms whose ranges before it shows. With sequential calibration both kinds read the
    // quantized stream, captured once.
    bool observedInputs = false, quantizedInputs = false, transformWantsQuant = false,
         transformWantsRef = false;
    for (const auto& t : m_options.transforms) {
        const bool wantsQuant = t->stream() != BlockTransform::Stream::Observed;
        const bool quantized = !floatCalibration || wantsQuant;
        const bool captures = t->needsInputs() || (analyze && !t->rangesLabel().empty());
        transformWantsQuant = transformWantsQuant || wantsQuant;
        transformWantsRef =
            transformWantsRef || t->stream() == BlockTransform::Stream::QuantizedAndReference;
        (quantized ? quantizedInputs : observedInputs) |= captures;
    }

    // The streams this run needs. Static observers read the reference stream (float
    // calibration) or the quantized one (sequential); analysis compares both; a transform that
    // asks for the quantized stream (GPTQ) has it carried in either mode, and one that compares
    // it with the full-precision one (GPTAQ, Qronos) has both.
    const bool hasCalibration = calibration.defined() && calibration.size(0) > 0;
    const bool needRef = hasCalibration && (analyze || floatCalibration || transformWantsRef);
    const bool needQuant = hasCalibration && (analyze || !floatCalibration || transformWantsQuant);
    const ForwardContext calibCtx =
        hasCalibration ? m_model.makeContext(calibration.size(1)) : ForwardContext{};
    at::Tensor ref, quant;
    ForwardContext evalCtx;
    at::Tensor evalStream;
    if (evaluation.defined())
        evalCtx = m_model.makeContext(evaluation.size(1));
    // A resumed run: the finished blocks go to the sink as saved, the streams continue from
    // the boundary after the last of them.
    ResumeState* const resume = m_options.resume;
    const int resumed = resume ? resume->finishedBlocks() : 0;
    if (resumed > blocks)
        throw Error(resume->dir() + "/state.json", "finished_blocks",
                    std::to_string(resumed) + " finished blocks saved for a model of " +
                        std::to_string(blocks));
    for (int bi = 0; bi < resumed; ++bi) {
        progress.report(bi, 0.0, "restoring");
        std::unique_ptr<DecoderBlock> block = m_model.loadBlock(bi);
        std::vector<LayerPlan> plans = m_planner.planBlock(*block);
        if (sink) {
            resume->restoreBlock(bi, *block, plans, device);
            sink(bi, *block, plans);
        }
        for (const LayerPlan& p : plans)
            result.layers.push_back(p.report);
        result.blockSeconds.push_back(resume->blockSeconds().at(size_t(bi)));
    }
    if (resumed > 0) {
        ResumeStreams saved = resume->restoreStreams(device);
        const auto check = [&](const at::Tensor& t, bool needed, const char* name,
                               const at::Tensor& ids) {
            const bool fits =
                t.defined() == needed &&
                (!needed || (t.dim() == 3 && t.size(0) == ids.size(0) && t.size(1) == ids.size(1)));
            if (!fits)
                throw Error(resume->dir(), name,
                            std::string("the saved ") + name +
                                " stream does not fit this run's windows");
        };
        check(saved.reference, needRef, "reference", calibration);
        check(saved.quantized, needQuant, "quantized", calibration);
        check(saved.evaluation, evaluation.defined(), "evaluation", evaluation);
        ref = saved.reference;
        quant = saved.quantized;
        evalStream = saved.evaluation;
    } else {
        if (hasCalibration) {
            const at::Tensor embedded = m_model.embed(calibration.to(device));
            ref = needRef ? embedded : at::Tensor();
            quant = needQuant ? (needRef ? embedded.clone() : embedded) : at::Tensor();
        }
        if (evaluation.defined())
            evalStream = m_model.embed(evaluation.to(device));
    }

    DeviceRunAhead runAhead(device);
    for (int bi = resumed; bi < blocks; ++bi) {
        runAhead.waitForRoom();
        const auto t0 = std::chrono::steady_clock::now();
        // The previous block's weights are freed by now; their pages go back before the next
        // block's are allocated, so a run holds about one block, not a heap of all of them.
        // Runs that write an export trim every time (their memory bound is the point); the
        // others once the free heap outgrows what the next block's activations will reuse.
        if (bi > 0)
            releaseFreedHeapMemory(sink ? 0 : kFreeHeapKept);
        progress.report(bi, 0.0, "loading");
        std::unique_ptr<DecoderBlock> block = m_model.loadBlock(bi);
        std::vector<LayerPlan> plans = m_planner.planBlock(*block);
        BlockQuantHook hook(plans);
        BlockRun run(*block, plans, hook, progress, m_options.maxBatchTokens);
        run.analyse = analyze && hasCalibration;
        run.shards = m_options.shards;
        run.releaseFloatWeights = m_options.sinkReadsOnlyCodes && sink && !hasCalibration &&
                                  !evalStream.defined() && !analyze && !m_options.keepPlans;
        const at::Tensor& observed = floatCalibration ? ref : quant;

        // Capture and transforms see the full-precision block.
        {
            pass::TransformInputs fromObserved, fromQuant;
            if (hasCalibration) {
                fromObserved.stream = observed;
                fromQuant.stream = quant;
                fromQuant.reference = ref;
                if (floatCalibration && observedInputs)
                    fromObserved.captured = pass::captureInputs(run, observed, calibCtx);
                if (quantizedInputs)
                    fromQuant.captured = pass::captureInputs(run, quant, calibCtx);
            }
            pass::applyTransforms(run, m_options.transforms,
                                  floatCalibration ? fromObserved : fromQuant, fromQuant,
                                  m_model.config(), calibCtx, &m_model.checkpoint());
        }
        pass::quantizeWeights(run);

        bool observe = false;
        for (const LayerPlan& p : plans)
            observe = observe || p.needsObservation();
        // An analysed run passes the full-precision block over the reference stream once: float
        // calibration observes there, and the analysis reuses that pass's captures when they fit
        // the memory budget.
        const bool refPass = analyze && hasCalibration && (observe ? floatCalibration : true) &&
                             captureBytes(plans, ref) <= m_options.maxCaptureBytes;
        std::vector<BatchCapture> refCaptures;
        at::Tensor nextRef, nextQuant;
        if (observe && !hasCalibration)
            throw Error("calibration", "data",
                        "block " + std::to_string(bi) +
                            " has static quantizers but no calibration samples were given");
        if (observe || refPass) {
            // Float calibration advances the reference stream in the same pass.
            const at::Tensor& stream = refPass ? ref : observed;
            at::Tensor out =
                pass::observeActivations(run, stream, calibCtx, !(floatCalibration || refPass),
                                         refPass ? &refCaptures : nullptr);
            if (floatCalibration || refPass)
                nextRef = out;
        }
        pass::freeze(run);

        if (analyze && hasCalibration) {
            // Spread over ranks: one analyzer per calibration shard of this rank, merged with
            // the other ranks' in shard order (every rank then holds one process's reports).
            std::vector<LayerAnalyzer> analyzers;
            const CalibrationShards* shards = m_options.shards;
            if (shards) {
                const int64_t shardTokens =
                    windowsPerBatch(m_options.maxBatchTokens, quant.size(1)) * quant.size(1);
                for (const int64_t s : shards->mine)
                    analyzers.emplace_back(plans, s * shardTokens);
            } else {
                analyzers.emplace_back(plans);
            }
            pass::analyse(run, ref, quant, calibCtx, analyzers, refCaptures, nextRef, nextQuant);
            if (shards)
                LayerAnalyzer::combineShards(*shards, analyzers, device).finish(plans);
            else
                analyzers.front().finish(plans);
        } else {
            if (needRef && !nextRef.defined())
                nextRef = pass::forward(run, ref, calibCtx, BlockQuantHook::Mode::Reference, false,
                                        0.5, 0.9, "propagating");
            if (needQuant)
                nextQuant = pass::forward(run, quant, calibCtx, BlockQuantHook::Mode::Apply, true,
                                          0.5, 0.9, "propagating");
        }
        refCaptures.clear();
        if (evalStream.defined())
            evalStream = pass::forward(run, evalStream, evalCtx, BlockQuantHook::Mode::Apply, true,
                                       0.9, 0.97, "evaluating");
        ref = nextRef;
        quant = nextQuant;

        progress.report(bi, 0.97, "finishing");
        pass::setWeights(run, true);
        if (sink)
            sink(bi, *block, plans);
        std::vector<LayerReport> reports;
        for (const LayerPlan& p : plans)
            reports.push_back(p.report);
        if (m_options.onBlockReports)
            m_options.onBlockReports(bi, reports);
        for (LayerReport& r : reports)
            result.layers.push_back(std::move(r));
        if (m_options.keepPlans)
            result.plans.push_back(std::move(plans));
        runAhead.enqueued();
        result.blockSeconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (resume) {
            progress.report(bi, 0.99, "saving its state");
            resume->saveBlock(bi, *block, m_options.keepPlans ? result.plans.back() : plans,
                              {ref, quant, evalStream}, result.blockSeconds.back(), bool(sink));
            if (m_options.afterSave)
                m_options.afterSave();
            resume->dropOlderStreams();
        }
    } // the block (and, unless kept, its plans) is released here
    releaseFreedHeapMemory();
    result.skipped = m_planner.skipped();

    if (evalStream.defined()) {
        result.evalHidden = evalStream;
        result.evalNllSum = sumWindowNll(
            m_model, evalStream, evaluation.to(device), m_options.maxBatchTokens,
            [&](int64_t done, int64_t all) {
                // 1.0 is the run's own end (runQuantization reports it).
                progress.reportOverall(0.99 + 0.009 * double(done) / double(all),
                                       "scoring window " + std::to_string(done) + " of " +
                                           std::to_string(all));
                return true;
            },
            m_options.onEvalLogits, &result.evalBatchNll);
        result.evalPredicted = evaluation.size(0) * (evaluation.size(1) - 1);
    }
    return result;
}

at::Tensor CalibrationPipeline::forwardWithPlans(std::vector<std::vector<LayerPlan>>& plans,
                                                 const PlanFilter& filter, at::Tensor stream,
                                                 int fromBlock, int64_t seqLen,
                                                 std::vector<at::Tensor>* blockInputs,
                                                 const PipelineProgress& progressFn) {
    const int blocks = m_model.numBlocks();
    if (int(plans.size()) != blocks)
        throw Error("forwardWithPlans", "plans",
                    "expected the plans of " + std::to_string(blocks) + " blocks, got " +
                        std::to_string(plans.size()));
    const BlockProgress progress(progressFn, blocks);
    const ForwardContext ctx = m_model.makeContext(seqLen);
    if (blockInputs)
        blockInputs->resize(size_t(blocks));
    DeviceRunAhead runAhead(m_model.compute().device);
    for (int bi = fromBlock; bi < blocks; ++bi) {
        if (blockInputs)
            (*blockInputs)[size_t(bi)] = stream;
        runAhead.waitForRoom();
        std::unique_ptr<DecoderBlock> block = m_model.loadBlock(bi);
        std::vector<LayerPlan>& blockPlans = plans[size_t(bi)];
        BlockQuantHook hook(blockPlans, filter);
        BlockRun run(*block, blockPlans, hook, progress, m_options.maxBatchTokens, filter);
        stream = pass::forward(run, stream, ctx, BlockQuantHook::Mode::Apply, true, 0.0, 1.0,
                               "evaluating");
        runAhead.enqueued();
    }
    return stream;
}

at::Tensor CalibrationPipeline::embedWindows(const at::Tensor& ids) {
    return m_model.embed(ids.to(m_model.compute().device));
}

double CalibrationPipeline::scoreWindows(const at::Tensor& hidden, const at::Tensor& ids,
                                         const LogitsObserver& onLogits) {
    return sumWindowNll(m_model, hidden, ids.to(m_model.compute().device), m_options.maxBatchTokens,
                        {}, onLogits);
}

} // namespace qs
