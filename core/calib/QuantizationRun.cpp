#include "calib/QuantizationRun.h"

#include "calib/CalibrationData.h"
#include "eval/TextEvaluation.h"
#include "export/FakeQuantCheckpointWriter.h"
#include "io/JsonFields.h"
#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"
#include "util/Error.h"

#include <QDir>

#include <chrono>
#include <cmath>

namespace qs {

namespace {

// Export targets this engine writes today; the others are accepted by recipes (so they survive
// round trips) but refused by a run that would have to write them.
void checkExportTargets(const Recipe& recipe) {
    for (size_t i = 0; i < recipe.exportTargets.size(); ++i)
        if (recipe.exportTargets[i] != "hf_fake")
            throw Error("recipe", "export_targets[" + std::to_string(i) + "]",
                        "the engine cannot write '" + recipe.exportTargets[i] +
                            "' yet (it writes hf_fake, the fake-quantized checkpoint)");
}

// Patterns of the recipe that match none of the model's quantizable linears: almost always a
// typo, and otherwise silently without effect.
void warnUnmatchedPatterns(const Recipe& recipe, const ModuleNode& tree,
                           std::vector<std::string>& warnings) {
    std::vector<const ModuleNode*> nodes;
    tree.collect("linear", nodes);
    auto matchesAny = [&](const std::string& pattern) {
        for (const ModuleNode* n : nodes)
            if (n->blockIndex >= 0 && matchesLayerPattern(pattern, n->name))
                return true;
        return false;
    };
    // The LM head stays in full precision whatever the recipe says; excluding it, as Quark's
    // commands do, is no mistake.
    for (size_t i = 0; i < recipe.exclude.size(); ++i)
        if (!matchesAny(recipe.exclude[i]) && recipe.exclude[i] != "lm_head" &&
            recipe.exclude[i] != "*lm_head")
            warnings.push_back("exclude[" + std::to_string(i) + "] '" + recipe.exclude[i] +
                               "' matches no quantizable layer");
    for (size_t i = 0; i < recipe.layerOverrides.size(); ++i)
        if (!matchesAny(recipe.layerOverrides[i].pattern))
            warnings.push_back("layer_overrides[" + std::to_string(i) + "] '" +
                               recipe.layerOverrides[i].pattern + "' matches no quantizable layer");
}

} // namespace

PreparedRun prepareRun(const QuantizationRequest& req, const PipelineProgress& progress) {
    PreparedRun prep;
    prep.recipe = req.recipe;
    Recipe& recipe = prep.recipe;
    recipe.validate("recipe");
    // A recipe field the engine cannot honour is refused here, never ignored.
    for (auto& t : makeBlockTransforms(recipe.algorithms, "recipe"))
        prep.transforms.push_back(std::move(t));
    if (!req.outDir.empty())
        checkExportTargets(recipe);

    prep.handle = openModelHandle(req.modelDir);
    const ModelHandle& handle = prep.handle;
    const ModuleNode tree = handle.moduleTree();
    const std::string configPath =
        QDir(QString::fromStdString(req.modelDir)).filePath("config.json").toStdString();
    const Provenance fresh = makeProvenance(readTextFile(configPath), req.modelDir);
    // A replayed recipe keeps its recorded provenance, so the files it writes stay identical;
    // a model other than the recorded one is named in the error.
    if (!recipe.provenance.modelConfigHash.empty() &&
        recipe.provenance.modelConfigHash != fresh.modelConfigHash)
        throw Error("recipe", "provenance.model_config_hash",
                    "the recipe was recorded on a model with another config.json (" +
                        recipe.provenance.modelPath + "); remove the hash to apply it anyway");
    if (recipe.provenance.modelConfigHash.empty())
        recipe.provenance = fresh;

    warnUnmatchedPatterns(recipe, tree, prep.warnings);
    prep.planner = std::make_unique<LayerPlanner>(LayerPlanner::forRecipe(recipe));
    prep.planner->checkShapes(tree);
    const bool needCalib = req.analyze || prep.planner->needsCalibration(tree);
    const int64_t maxPos = handle.config.maxPositions;
    std::optional<LoadedTokenizer> tok;
    auto tokenizer = [&]() -> const LoadedTokenizer& {
        if (!tok)
            tok = TokenizerLoader::load(req.modelDir, req.tokenizer);
        return *tok;
    };

    // Evaluation settings are checked before calibration text is read (a bad --seq-len fails
    // at once, not after tokenizing a large calibration set).
    int64_t evalSeq = 0;
    if (req.evaluate) {
        if (recipe.evaluation.dataPath.empty())
            throw Error("recipe", "evaluation.data", "no evaluation text given");
        evalSeq =
            recipe.evaluation.seqLen > 0 ? recipe.evaluation.seqLen : defaultSeqLen(handle.config);
        if (evalSeq < 2)
            throw Error("recipe", "evaluation.seq_len", "must be at least 2");
        if (maxPos > 0 && evalSeq > maxPos)
            throw Error("recipe", "evaluation.seq_len",
                        std::to_string(evalSeq) + " exceeds the model's max_position_embeddings (" +
                            std::to_string(maxPos) + ")");
    }
    if (needCalib) {
        if (recipe.calibration.dataPath.empty())
            throw Error("recipe", "calibration.data",
                        "this recipe has static activation quantizers (or analysis was asked): "
                        "give calibration text");
        int64_t seq = recipe.calibration.seqLen;
        if (maxPos > 0 && seq > maxPos)
            seq = maxPos; // a model shorter than the recipe's window calibrates on full windows
        if (progress && !progress(0.0, "tokenizing calibration data"))
            throw Cancelled();
        const std::vector<int32_t> ids = tokenizeFile(tokenizer(), recipe.calibration.dataPath);
        checkTokenIds(ids, handle.config, recipe.calibration.dataPath);
        prep.calibration = calibrationSamples(ids, recipe.calibration.numSamples, seq,
                                              recipe.calibration.seed, recipe.calibration.dataPath);
        if (prep.calibration.size(0) < recipe.calibration.numSamples)
            prep.warnings.push_back(
                "calibration: " + recipe.calibration.dataPath + " holds " +
                std::to_string(prep.calibration.size(0)) + " windows of " + std::to_string(seq) +
                " tokens, fewer than the " + std::to_string(recipe.calibration.numSamples) +
                " asked; calibrating on " + std::to_string(prep.calibration.size(0)));
    } else {
        prep.calibration = at::zeros({0, 2}, at::kLong); // weight-only: nothing to observe
    }
    if (req.evaluate) {
        if (progress && !progress(0.0, "tokenizing " + recipe.evaluation.dataPath))
            throw Cancelled();
        const std::vector<int32_t> ids = tokenizeFile(tokenizer(), recipe.evaluation.dataPath);
        checkTokenIds(ids, handle.config, recipe.evaluation.dataPath);
        prep.evalTokens = int64_t(ids.size());
        prep.evaluation = evaluationWindows(ids, evalSeq, recipe.evaluation.maxWindows,
                                            recipe.evaluation.dataPath);
        if (recipe.evaluation.maxWindows > prep.evaluation.size(0))
            prep.warnings.push_back("evaluation: " + recipe.evaluation.dataPath + " holds " +
                                    std::to_string(prep.evaluation.size(0)) + " windows of " +
                                    std::to_string(evalSeq) + " tokens, fewer than the " +
                                    std::to_string(recipe.evaluation.maxWindows) + " asked");
    }
    if (req.strict && !prep.warnings.empty())
        throw Error(
            "--strict", "",
            prep.warnings.front() +
                (prep.warnings.size() > 1
                     ? " (and " + std::to_string(prep.warnings.size() - 1) + " more warning(s))"
                     : std::string()));
    prep.model = handle.instantiate(req.compute);
    return prep;
}

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

QuantizationOutcome runQuantization(const QuantizationRequest& req,
                                    const PipelineProgress& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    PreparedRun prep = prepareRun(req, progress);
    QuantizationOutcome outcome;
    outcome.recipe = prep.recipe;

    PipelineOptions options;
    options.mode = prep.recipe.calibration.mode;
    options.analyze = req.analyze;
    options.keepPlans = req.keepPlans;
    options.transforms = prep.transforms;
    options.onBlockReports = req.onBlockReports;
    CalibrationPipeline pipeline(*prep.model, *prep.planner, options);

    std::unique_ptr<FakeQuantCheckpointWriter> writer;
    if (!req.outDir.empty()) {
        writer = std::make_unique<FakeQuantCheckpointWriter>(*prep.handle.checkpoint, req.modelDir,
                                                             req.outDir, prep.model->numBlocks());
        writer->writeLeading();
    }
    BlockSink sink;
    if (writer)
        sink = [&writer](int index, DecoderBlock& block, const std::vector<LayerPlan>&) {
            writer->writeBlock(index, block);
        };

    const auto runStart = std::chrono::steady_clock::now();
    PipelineResult result = pipeline.run(prep.calibration, prep.evaluation, progress, sink);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
    if (writer)
        writer->commit(prep.recipe.toOrderedJson().dump(2) + "\n");

    outcome.warnings = prep.warnings;
    outcome.skipped = result.skipped;
    outcome.blockSeconds = result.blockSeconds;
    outcome.plans = std::move(result.plans);
    if (req.evaluate)
        outcome.perplexity =
            perplexityResult(prep, result.evalNllSum, result.evalPredicted, seconds);
    AnalysisReport& report = outcome.report;
    report.model = prep.handle.directory;
    report.recipe = prep.recipe.toJson();
    report.calibrationSamples = prep.calibration.size(0);
    report.seqLen = prep.calibration.size(1);
    report.layers = std::move(result.layers);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress)
        progress(1.0, "done");
    return outcome;
}

PerplexityResult evaluateModelOnText(const std::string& modelDir, const EvalRequest& request,
                                     const PipelineProgress& progress, TokenizerBackend backend,
                                     std::vector<std::string>* warnings) {
    QuantizationRequest q;
    q.modelDir = modelDir;
    q.recipe.evaluation = request.evaluation; // no scheme: nothing is quantized
    q.compute = parseComputeOptions(request.device, request.dtype);
    q.evaluate = true;
    q.tokenizer = backend;
    QuantizationOutcome out = runQuantization(q, progress);
    if (warnings)
        *warnings = std::move(out.warnings);
    return *out.perplexity;
}

} // namespace qs
