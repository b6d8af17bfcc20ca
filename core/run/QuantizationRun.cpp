#include "run/QuantizationRun.h"

#include "calib/CalibrationShards.h"
#include "calib/ResumeState.h"
#include "dist/RankGroup.h"
#include "eval/FidelityComparison.h"
#include "eval/WindowShards.h"
#include "export/FormatWriter.h"
#include "export/TransformedOuterTensors.h"
#include "run/FullPrecisionReference.h"
#include "run/ResumeKey.h"
#include "util/Error.h"

#include <QDir>
#include <QTemporaryDir>

#include <chrono>
#include <cmath>

namespace qs {

namespace {

// Every evaluation shard's fidelity samples (`mine`: this rank's shards', in order, one per
// scored position) on every rank, in shard order: the samples one process appends batch after
// batch, so its percentiles and bootstrap (summarizeFidelity) are the same bits.
FidelitySamples gatherSamples(RankGroup& group, const at::Tensor& evaluation, int64_t shardCount,
                              int64_t windowsPerShard, const std::vector<int64_t>& myShards,
                              const FidelitySamples& mine) {
    const int64_t windows = evaluation.size(0), positions = evaluation.size(1) - 1;
    std::vector<std::vector<double>> parts;
    size_t at = 0;
    for (const int64_t s : myShards) {
        const size_t n =
            size_t(std::min(windowsPerShard, windows - s * windowsPerShard) * positions);
        if (at + n > mine.kl.size())
            throw Error("fidelity", "evaluation",
                        "this rank compared fewer positions than its windows hold");
        std::vector<double> part;
        for (const std::vector<double>* v : {&mine.kl, &mine.deltaP, &mine.nllBase, &mine.nllQuant})
            part.insert(part.end(), v->begin() + long(at), v->begin() + long(at + n));
        part.insert(part.end(), mine.sameTop.begin() + long(at),
                    mine.sameTop.begin() + long(at + n));
        parts.push_back(std::move(part));
        at += n;
    }
    CalibrationShards shards; // the evaluation's shards travel as the calibration's do
    shards.group = &group;
    shards.count = shardCount;
    shards.mine = myShards;
    FidelitySamples all;
    for (const std::vector<double>& part : gatherInShardOrder(shards, parts, "fidelity")) {
        const size_t n = part.size() / 5;
        auto slice = [&](int k) { return part.begin() + long(size_t(k) * n); };
        all.kl.insert(all.kl.end(), slice(0), slice(1));
        all.deltaP.insert(all.deltaP.end(), slice(1), slice(2));
        all.nllBase.insert(all.nllBase.end(), slice(2), slice(3));
        all.nllQuant.insert(all.nllQuant.end(), slice(3), slice(4));
        for (auto it = slice(4); it != part.end(); ++it)
            all.sameTop.push_back(uint8_t(*it));
    }
    return all;
}

} // namespace

PerplexityResult perplexityResult(const PreparedRun& prep, double nllSum, int64_t predicted,
                                  double seconds) {
    PerplexityResult p;
    p.tokens = prep.evalTokens;
    p.windows = prep.evaluation.size(0);
    p.seqLen = prep.evaluation.size(1);
    p.predicted = predicted;
    p.meanNll = nllSum / double(predicted);
    p.perplexity = std::exp(p.meanNll);
    p.seconds = seconds;
    p.tokensPerSecond = seconds > 0 ? double(p.windows * p.seqLen) / seconds : 0.0;
    p.device = prep.model->compute().device.str();
    p.dtype = dtypeLabel(prep.model->compute().dtype);
    return p;
}

QuantizationOutcome runQuantization(const RunRequest& req, const PipelineProgress& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    PreparedRun prep = prepareRun(req, progress);
    QuantizationOutcome outcome;
    outcome.recipe = prep.recipe;
    // The full-precision side first: its pass (when not cached) frees its model before this
    // run's blocks are loaded.
    std::optional<FullPrecisionReference> reference;
    // The request's recipe, not the prepared one: over a checkpoint stored quantized, a recipe
    // without schemes runs the stored quantization, and that model is the reference itself.
    const bool fidelity = req.evaluate && req.fidelity && req.recipe.quantizesAnything();
    // A joined group splits the work, even a world of one (NCCL under torchrun).
    const bool split = req.ranks != nullptr;
    // Every rank of a distributed run compares its own windows, against the reference of all
    // windows (computed on each rank when not cached; rank 0 alone writes the cache).
    if (fidelity)
        reference = FullPrecisionReference::obtain(
            req, prep,
            [&progress](double f, const std::string& m) {
                return !progress || progress(0.25 * f, "full precision: " + m);
            },
            /*writesCache=*/!split || req.ranks->rank() == 0);
    auto runProgress = !reference ? progress : [&progress](double f, const std::string& m) {
        return !progress || progress(0.25 + 0.75 * f, m);
    };

    PipelineOptions options;
    options.mode = prep.recipe.calibration.mode;
    options.maxBatchTokens = batchTokensFor(prep.model->compute().device);
    options.analyze = req.analyze;
    options.keepPlans = req.keepPlans;
    options.transforms = prep.transforms;
    options.onBlockReports = req.onBlockReports;
    // The fidelity comparison reads each scored batch's logits as the perplexity computes them,
    // against the reference's logits of the same positions. A model-level transform (rotation)
    // changed this model's head with its blocks; the reference's hidden states go through a
    // plain instance of the model's head.
    FidelitySamples fidelitySamples;
    // A distributed evaluation's windows, by their row of the evaluation tensor (its batches
    // are numbered within them).
    std::vector<int64_t> myWindowRows;
    std::unique_ptr<DecoderModel> plainHead;
    BaseLogitRows baseRows;
    if (reference) {
        if (prep.model->hasWeightTransform())
            plainHead = prep.handle.instantiate(prep.model->compute());
        const at::Device device = prep.model->compute().device;
        baseRows = baseLogitsFromHidden(
            plainHead ? *plainHead : *prep.model,
            [&reference, device](int64_t first, int64_t n) {
                return reference->windows(first, n, device);
            },
            prep.evaluation.size(1));
        options.onEvalLogits = [&](int64_t first, const at::Tensor& logits) {
            const int64_t window = myWindowRows.empty() ? first : myWindowRows.at(size_t(first));
            compareScoredBatch(baseRows, window, logits, prep.evaluation, fidelitySamples);
        };
    }

    std::vector<std::unique_ptr<Exporter>> exporters;
    ExportContext context;
    context.source = prep.handle.checkpoint.get();
    context.sourceDir = req.modelDir;
    context.numBlocks = prep.model->numBlocks();
    context.recipe = &prep.recipe;
    context.options = req.exportOptions;
    // A model-level transform (rotation) changed the tensors outside the blocks as well: the
    // exporters read those from an overlay written here, the rest from the source.
    std::unique_ptr<Checkpoint> transformedSource;
    QTemporaryDir overlayDir(QDir::tempPath() + "/quantscope-transformed-XXXXXX");
    if (prep.model->hasWeightTransform() && !prep.exportFormats.empty()) {
        if (!overlayDir.isValid())
            throw Error(overlayDir.path().toStdString(), "",
                        "cannot create a temporary folder: " +
                            overlayDir.errorString().toStdString());
        const std::string overlay = overlayDir.filePath("outer.safetensors").toStdString();
        context.headUntied =
            writeTransformedOuterTensors(*prep.model, *prep.handle.checkpoint, overlay);
        transformedSource = Checkpoint::open(prep.handle.checkpoint->directory());
        transformedSource->addOverlay(overlay);
        context.source = transformedSource.get();
    }
    bool routedExperts = false;
    {
        std::vector<const ModuleNode*> linears;
        const ModuleNode tree = prep.handle.moduleTree();
        tree.collect("linear", linears);
        for (const ModuleNode* n : linears)
            if (n->blockIndex >= 0)
                context.layerNames.push_back(n->name);
        std::vector<const ModuleNode*> routers;
        tree.collect("router", routers);
        for (const ModuleNode* n : routers)
            context.fullPrecisionLinears.push_back(n->name);
        routedExperts = !routers.empty();
    }
    // In a distributed run rank 0 alone writes the files: every rank computes the same blocks.
    const bool writes = !split || req.ranks->rank() == 0;
    for (const std::string& f : writes ? prep.exportFormats : std::vector<std::string>{}) {
        context.outDir = prep.exportFormats.size() == 1 ? req.outDir
                                                        : QDir(QString::fromStdString(req.outDir))
                                                              .filePath(QString::fromStdString(f))
                                                              .toStdString();
        exporters.push_back(createExporter(f, context));
        exporters.back()->writeLeading();
    }
    options.sinkReadsOnlyCodes = !exporters.empty();
    for (const auto& e : exporters)
        options.sinkReadsOnlyCodes = options.sinkReadsOnlyCodes && e->readsOnlyCodes();
    BlockSink sink;
    if (!exporters.empty())
        sink = [&exporters](int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) {
            for (auto& e : exporters)
                e->writeBlock(index, block, plans);
        };

    // A distributed evaluation runs this rank's shards only (eval/WindowShards.h).
    std::vector<int64_t> myShards;
    at::Tensor myWindows = prep.evaluation;
    const WindowShards shards(prep.evaluation.defined() ? prep.evaluation.size(0) : 0,
                              prep.evaluation.defined()
                                  ? windowsPerBatch(options.maxBatchTokens, prep.evaluation.size(1))
                                  : 1);
    if (split && prep.evaluation.defined()) {
        myShards = shards.shardsOf(req.ranks->rank(), req.ranks->size());
        myWindowRows = shards.windowsOf(req.ranks->rank(), req.ranks->size());
        myWindows = myWindowRows.empty()
                        ? at::Tensor()
                        : prep.evaluation.index_select(
                              0, at::tensor(at::ArrayRef<int64_t>(myWindowRows), at::kLong));
    }

    // The calibration windows are split the same way when every rank gets a batch, every
    // observer and algorithm combines across ranks and no layer is a routed expert (an expert
    // sees a different number of batches on each rank); otherwise each rank calibrates on all.
    at::Tensor myCalibration = prep.calibration;
    CalibrationShards calibrationShards;
    std::string unsplitCalibration; // why every rank calibrates on all windows, when it must
    if (split && prep.calibration.defined() && prep.calibration.size(0) > 0) {
        const WindowShards cut(prep.calibration.size(0),
                               windowsPerBatch(options.maxBatchTokens, prep.calibration.size(1)));
        if (cut.count() < req.ranks->size())
            unsplitCalibration = std::to_string(cut.count()) + " calibration batch" +
                                 (cut.count() == 1 ? "" : "es") + " for " +
                                 std::to_string(req.ranks->size()) + " ranks";
        else if (!observersMerge(prep.recipe))
            unsplitCalibration = "an observer keeps a histogram or its latest range, which "
                                 "ranks cannot merge exactly";
        else if (routedExperts)
            unsplitCalibration = "the model routes tokens to experts (each rank's batches "
                                 "reach different experts)";
        for (const auto& t : prep.transforms)
            if (unsplitCalibration.empty() && !t->combinesAcrossRanks())
                unsplitCalibration = t->name() + " searches over all the batches itself";
        if (unsplitCalibration.empty()) {
            calibrationShards.group = req.ranks.get();
            calibrationShards.count = cut.count();
            calibrationShards.mine = cut.shardsOf(req.ranks->rank(), req.ranks->size());
            const std::vector<int64_t> rows = cut.windowsOf(req.ranks->rank(), req.ranks->size());
            myCalibration = prep.calibration.index_select(
                0, at::tensor(at::ArrayRef<int64_t>(rows), at::kLong));
            options.shards = &calibrationShards;
        }
    }
    // A run that may resume keeps its state beside the export, each rank its own
    // (calib/ResumeState.h); ranks continue from the last block every one of them finished.
    std::optional<ResumeState> resume;
    if (req.resume) {
        if (req.outDir.empty())
            throw Error("resume", "out", "a run resumes into its export folder: give one (--out)");
        if (req.analyze || req.keepPlans)
            throw Error("resume", req.analyze ? "analyze" : "keepPlans",
                        "only an export run resumes (its per-layer analysis or kept plans are "
                        "not saved)");
        const int rank = split ? req.ranks->rank() : 0;
        const int world = split ? req.ranks->size() : 1;
        resume.emplace(resumeRankDir(req.outDir, rank), resumeKey(req, prep, rank, world));
        int finished = resume->open();
        if (split) {
            finished = int(req.ranks->min({double(finished)}).at(0));
            resume->rewindTo(finished);
            // No rank drops the older boundary's streams before every rank saved the newer.
            options.afterSave = [&req] { req.ranks->max(0.0); };
        }
        options.resume = &*resume;
    }
    CalibrationPipeline pipeline(*prep.model, *prep.planner, options);

    const auto runStart = std::chrono::steady_clock::now();
    PipelineResult result = pipeline.run(myCalibration, myWindows, runProgress, sink);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
    if (split && prep.evaluation.defined()) {
        // Every shard's sum lands in its own slot (the others add zeros: exact), then the slots
        // add up in shard order, as one process adds its batches.
        std::vector<double> perShard(size_t(shards.count()), 0.0);
        for (size_t j = 0; j < myShards.size() && j < result.evalBatchNll.size(); ++j)
            perShard[size_t(myShards[j])] = result.evalBatchNll[j];
        perShard = req.ranks->sum(perShard);
        result.evalNllSum = 0.0;
        for (const double v : perShard)
            result.evalNllSum += v;
        result.evalPredicted = prep.evaluation.size(0) * (prep.evaluation.size(1) - 1);
        seconds = req.ranks->max(seconds); // the run's time is its slowest rank's
        if (reference)
            fidelitySamples =
                gatherSamples(*req.ranks, prep.evaluation, shards.count(),
                              windowsPerBatch(options.maxBatchTokens, prep.evaluation.size(1)),
                              myShards, fidelitySamples);
    }
    for (auto& e : exporters)
        e->commit(prep.recipe.toOrderedJson().dump(2) + "\n");
    if (resume) {
        resume->remove();
        QDir().rmdir(QString::fromStdString(resumeDir(req.outDir))); // once no rank's is left
    }

    outcome.warnings = prep.warnings;
    if (!unsplitCalibration.empty())
        outcome.warnings.push_back(
            "every rank calibrated on all " + std::to_string(prep.calibration.size(0)) +
            " windows (the same result as one process, at one process's speed): " +
            unsplitCalibration);
    outcome.skipped = result.skipped;
    outcome.blockSeconds = result.blockSeconds;
    outcome.plans = std::move(result.plans);
    outcome.outDir = req.outDir;
    if (req.evaluate)
        outcome.perplexity =
            perplexityResult(prep, result.evalNllSum, result.evalPredicted, seconds);
    if (reference) {
        outcome.fullPrecision = reference->perplexity();
        outcome.fidelity = summarizeFidelity(fidelitySamples);
        outcome.fidelity->referenceFromCache = reference->fromCache();
    }
    outcome.evalHidden = std::move(result.evalHidden);
    AnalysisReport& report = outcome.report;
    report.model = prep.handle.directory;
    report.recipe = prep.recipe.toJson();
    report.calibrationSamples = prep.calibration.size(0);
    report.seqLen = prep.calibration.size(1);
    report.layers = std::move(result.layers);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    outcome.seconds = report.seconds;
    if (progress)
        progress(1.0, "done");
    return outcome;
}

PerplexityResult evaluateModelOnText(const std::string& modelDir, const EvalRequest& request,
                                     const PipelineProgress& progress, TokenizerBackend backend,
                                     std::vector<std::string>* warnings) {
    RunRequest q;
    q.modelDir = modelDir;
    q.recipe.evaluation = request.evaluation; // no scheme: nothing is quantized
    q.device = request.device;
    q.dtype = request.dtype;
    q.evaluate = true;
    q.tokenizer = backend;
    QuantizationOutcome out = runQuantization(q, progress);
    if (warnings)
        *warnings = std::move(out.warnings);
    return *out.perplexity;
}

} // namespace qs
