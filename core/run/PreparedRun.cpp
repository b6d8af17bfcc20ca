#include "run/PreparedRun.h"

#include "algo/TransformFactory.h"
#include "calib/CalibrationData.h"
#include "eval/TextEvaluation.h"
#include "export/FormatWriter.h"
#include "io/JsonFields.h"
#include "model/QuarkFolder.h"
#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"
#include "recipe/QuarkConfig.h"
#include "recipe/RecipeLimits.h"
#include "util/Error.h"

#include <QDir>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace qs {

namespace {

// The formats a run writes (see RunRequest::exportFormats); given formats replace the
// recipe's export_targets so the recipe written beside the output replays the same run.
std::vector<std::string> resolveExportFormats(const RunRequest& req, Recipe& recipe) {
    std::vector<std::string> formats;
    if (!req.exportFormats.empty()) {
        recipe.exportTargets.clear();
        for (const std::string& f : req.exportFormats) {
            const std::string name = canonicalExportFormat(f, "--format", f);
            if (std::find(formats.begin(), formats.end(), name) != formats.end())
                continue;
            formats.push_back(name);
            recipe.exportTargets.push_back(findExportFormat(name)->recipeTarget);
        }
    } else {
        for (size_t i = 0; i < recipe.exportTargets.size(); ++i) {
            const std::string field = "export_targets[" + std::to_string(i) + "]";
            formats.push_back(canonicalExportFormat(recipe.exportTargets[i], "recipe", field));
            if (!findExportFormat(formats.back())->available)
                throw Error("recipe", field,
                            "the engine cannot write '" + recipe.exportTargets[i] + "' yet");
        }
        if (formats.empty())
            formats.push_back("fake");
    }
    return formats;
}

// Every format must hold every quantized layer before any block is read; layouts only the
// consumers cannot load become warnings when `allowUnloadable`.
void checkExportFormats(const std::vector<std::string>& formats, const Recipe& recipe,
                        const ModuleNode& tree, const std::vector<std::string>& skipped,
                        bool allowUnloadable, const ModelConfig& model,
                        const ExportOptions& exportOptions, std::vector<std::string>& warnings) {
    for (const std::string& f : formats) {
        const std::vector<std::string> problems =
            exportProblems(f, {recipe, tree, skipped, !allowUnloadable, &model, exportOptions});
        if (!problems.empty()) {
            std::string text;
            for (const std::string& p : problems)
                text += "\n  " + p;
            throw Error("--format", f, "the " + f + " format cannot hold this recipe:" + text);
        }
        if (allowUnloadable)
            for (const std::string& p :
                 exportProblems(f, {recipe, tree, skipped, true, &model, exportOptions}))
                warnings.push_back(f + ": written although consumers will refuse it: " + p);
    }
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

PreparedRun prepareRun(const RunRequest& req, const PipelineProgress& progress) {
    PreparedRun prep;
    prep.recipe = req.recipe;
    Recipe& recipe = prep.recipe;
    recipe.validate("recipe");
    // A recipe field the engine cannot honour is refused here, never ignored.
    for (auto& t : makeBlockTransforms(recipe.algorithms, "recipe"))
        prep.transforms.push_back(std::move(t));
    if (req.outDir.empty() && !req.exportFormats.empty())
        throw Error("--format", "", "an export format needs an output folder (--out DIR)");
    if (!req.outDir.empty())
        prep.exportFormats = resolveExportFormats(req, recipe);
    // Each option against what the formats declare: a bad value fails before any work.
    checkExportOptions(req.exportOptions, "export options");
    const ComputeOptions compute = parseComputeOptions(req.device, req.dtype);

    prep.handle = openModelHandle(req.modelDir);
    const ModelHandle& handle = prep.handle;
    const ModuleNode tree = handle.moduleTree();
    const std::string configPath =
        QDir(QString::fromStdString(req.modelDir)).filePath("config.json").toStdString();
    // A real-quantized Quark export that is evaluated or analysed without a scheme of its own
    // runs as exported, as transformers + amd-quark and vLLM run it: its quantization_config is
    // the recipe, the weights are the stored codes dequantized, and static activations take the
    // stored scales (no calibration). Its algorithms were applied when it was written.
    const quant::StoredQuantization stored = req.outDir.empty() && !recipe.quantizesAnything()
                                                 ? readStoredQuantization(req.modelDir)
                                                 : quant::StoredQuantization{};
    if (!stored.empty()) {
        const Recipe exported = recipeFromQuarkConfigFile(configPath);
        recipe.global = exported.global;
        recipe.layerOverrides = exported.layerOverrides;
        recipe.layerTypeOverrides = exported.layerTypeOverrides;
        recipe.exclude = exported.exclude;
        recipe.kvCache = exported.kvCache;
        recipe.validate(configPath);
    }
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
    // Where this run computes, replayed recipe or not: the files it writes are this run's numbers,
    // named as its perplexities name them (run/QuantizationRun.cpp perplexityResult).
    recipe.provenance.device = compute.device.str();
    recipe.provenance.dtype = dtypeLabel(compute.dtype);

    // Model-level transforms (rotation) check the model now, before any block is read.
    std::shared_ptr<const WeightTransform> modelTransform;
    for (const auto& t : prep.transforms)
        if (auto w = t->modelTransform(handle.config)) {
            if (modelTransform)
                throw Error("recipe", "algorithms",
                            "two algorithms transform the whole model; only one can");
            modelTransform = std::move(w);
        }
    // A rotated model is exported as weights (its embedding, norms and head transformed too);
    // an online part has no place in any format.
    if (modelTransform && !prep.exportFormats.empty() && !modelTransform->notExportable().empty())
        throw Error("recipe", "algorithms",
                    "this rotated model cannot be exported: " + modelTransform->notExportable());

    warnUnmatchedPatterns(recipe, tree, prep.warnings);
    // Phi-3 projects q, k and v in one qkv_proj (DBRX in one Wqkv): the KV cache is part of one
    // output, which the per-layer output quantizer cannot address; refused rather than left
    // unquantized.
    if (recipe.kvCache && handle.config.layout.fusedQkv)
        throw Error("recipe", "kv_cache",
                    "KV-cache quantization is not supported on '" + handle.config.modelType +
                        "': k and v come out of one fused q/k/v projection");
    // DeepSeek-V3: k's nope part and v come out of one kv_b_proj, k's rope part out of
    // kv_a_proj_with_mqa and RoPE; no output of one projection is the cache.
    if (recipe.kvCache && handle.config.mla.kvLoraRank > 0)
        throw Error("recipe", "kv_cache",
                    "KV-cache quantization is not supported on '" + handle.config.modelType +
                        "': multi-head latent attention caches a latent, not k_proj/v_proj "
                        "outputs (k and v come out of one kv_b_proj)");
    for (const auto& t : prep.transforms)
        t->checkModel(handle.config);
    prep.planner = std::make_unique<LayerPlanner>(LayerPlanner::forRecipe(recipe));
    prep.planner->checkShapes(tree);
    if (!stored.empty()) {
        prep.planner->setStored(stored);
        if (prep.planner->needsCalibration(tree))
            throw Error(configPath, "quantization_config",
                        "a layer has static activation quantization but the export stores no "
                        "scale for it (input_scale / output_scale)");
    }
    checkExportFormats(prep.exportFormats, recipe, tree, prep.planner->skipped(),
                       req.allowUnloadable, handle.config, req.exportOptions, prep.warnings);
    for (const auto& [layer, scheme] : prep.planner->quantizedLinears(tree))
        for (const auto& t : prep.transforms)
            t->checkLayer(layer, scheme);
    bool transformsNeedInputs = false;
    for (const auto& t : prep.transforms)
        transformsNeedInputs = transformsNeedInputs || t->needsInputs();
    const bool needCalib =
        req.analyze || transformsNeedInputs || prep.planner->needsCalibration(tree);
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
        // (the recipe's own window was checked by its validation; the default is the model's)
        if (evalSeq < limits::kMinWindowTokens)
            throw Error(configPath, "max_position_embeddings",
                        "the model's context of " + std::to_string(evalSeq) +
                            " token(s) is shorter than one evaluation window");
        if (maxPos > 0 && evalSeq > maxPos)
            throw Error("recipe", "evaluation.seq_len",
                        std::to_string(evalSeq) + " exceeds the model's max_position_embeddings (" +
                            std::to_string(maxPos) + ")");
    }
    if (needCalib) {
        if (recipe.calibration.dataPath.empty())
            throw Error("recipe", "calibration.data",
                        "this recipe has static activation quantizers, an algorithm that reads "
                        "calibration inputs, or analysis was asked: give calibration text");
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
    prep.model = handle.instantiate(compute);
    if (modelTransform)
        prep.model->setWeightTransform(modelTransform);
    return prep;
}

} // namespace qs
