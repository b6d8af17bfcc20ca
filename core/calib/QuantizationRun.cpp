#include "calib/QuantizationRun.h"

#include "calib/CalibrationData.h"
#include "eval/TextEvaluation.h"
#include "export/FakeQuantCheckpointWriter.h"
#include "io/JsonFields.h"
#include "model/ModelLoader.h"
#include "recipe/Provenance.h"
#include "util/Error.h"

#include <QDir>

#include <chrono>
#include <cmath>

namespace qs {

namespace {

std::vector<std::pair<std::string, std::string>> blockLinears(const ModuleNode& tree) {
    std::vector<const ModuleNode*> nodes;
    tree.collect("linear", nodes);
    std::vector<std::pair<std::string, std::string>> out;
    for (const ModuleNode* n : nodes) {
        if (n->blockIndex < 0)
            continue;
        const size_t dot = n->name.rfind('.');
        out.emplace_back(n->name, n->name.substr(dot + 1));
    }
    return out;
}

} // namespace

bool recipeNeedsCalibration(const Recipe& recipe,
                            const std::vector<std::pair<std::string, std::string>>& linears) {
    for (const auto& [name, kind] : linears) {
        const auto scheme = recipe.schemeFor(name, kind);
        if (scheme && scheme->input && !scheme->input->isDynamic)
            return true;
        const auto out = recipe.kvOutputFor(name, kind);
        const auto output = out ? out : (scheme ? scheme->output : std::nullopt);
        if (output && !output->isDynamic)
            return true;
    }
    return false;
}

QuantizationOutcome runQuantization(const QuantizationRequest& req,
                                    const PipelineProgress& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    QuantizationOutcome outcome;
    outcome.recipe = req.recipe;
    Recipe& recipe = outcome.recipe;
    recipe.validate("recipe");

    const ModelHandle handle = openModelHandle(req.modelDir);
    const ModuleNode tree = handle.moduleTree();
    const auto linears = blockLinears(tree);
    const std::string configPath =
        QDir(QString::fromStdString(req.modelDir)).filePath("config.json").toStdString();
    const std::string configText = readTextFile(configPath);
    const Provenance fresh = makeProvenance(configText, req.modelDir);
    // A replayed recipe keeps its recorded provenance, so the files it writes stay identical;
    // a model other than the recorded one is named in the error.
    if (!recipe.provenance.modelConfigHash.empty() &&
        recipe.provenance.modelConfigHash != fresh.modelConfigHash)
        throw Error("recipe", "provenance.model_config_hash",
                    "the recipe was recorded on a model with another config.json (" +
                        recipe.provenance.modelPath + "); remove the hash to apply it anyway");
    if (recipe.provenance.modelConfigHash.empty())
        recipe.provenance = fresh;

    const bool needCalib = req.analyze || recipeNeedsCalibration(recipe, linears);
    const int64_t maxPos = handle.config.maxPositions;
    std::optional<LoadedTokenizer> tok;
    auto tokenizer = [&]() -> const LoadedTokenizer& {
        if (!tok)
            tok = TokenizerLoader::load(req.modelDir, req.tokenizer);
        return *tok;
    };

    at::Tensor calib;
    if (needCalib) {
        if (recipe.calibration.dataPath.empty())
            throw Error("recipe", "calibration.data",
                        "this recipe has static activation quantizers (or analysis was asked): "
                        "give calibration text (--calib-data FILE)");
        int64_t seq = recipe.calibration.seqLen;
        if (maxPos > 0 && seq > maxPos)
            seq = maxPos; // a model shorter than the recipe's window calibrates on full windows
        if (progress && !progress(0.0, "tokenizing calibration data"))
            throw Cancelled();
        calib = calibrationSamples(tokenizeFile(tokenizer(), recipe.calibration.dataPath),
                                   recipe.calibration.numSamples, seq, recipe.calibration.seed,
                                   recipe.calibration.dataPath);
    } else {
        calib = at::zeros({0, 2}, at::kLong); // weight-only: no activations to observe
    }

    at::Tensor evalIds;
    std::vector<int32_t> evalTokens;
    if (req.evaluate) {
        if (recipe.evaluation.dataPath.empty())
            throw Error("recipe", "evaluation.data", "no evaluation text given (--data FILE)");
        const int64_t seq =
            recipe.evaluation.seqLen > 0 ? recipe.evaluation.seqLen : defaultSeqLen(handle.config);
        if (maxPos > 0 && seq > maxPos)
            throw Error("--seq-len", "",
                        std::to_string(seq) + " exceeds the model's max_position_embeddings (" +
                            std::to_string(maxPos) + ")");
        evalTokens = tokenizeFile(tokenizer(), recipe.evaluation.dataPath);
        evalIds = evaluationWindows(evalTokens, seq, recipe.evaluation.maxWindows,
                                    recipe.evaluation.dataPath);
    }

    std::unique_ptr<DecoderModel> model = handle.instantiate(req.compute);
    PipelineOptions options;
    options.schemeFor = [&recipe](const std::string& n, const std::string& k) {
        return recipe.schemeFor(n, k);
    };
    options.outputSpecFor = [&recipe](const std::string& n, const std::string& k) {
        return recipe.kvOutputFor(n, k);
    };
    options.unfitPolicy = recipe.unfitPolicy;
    options.analyze = req.analyze;
    options.onBlockReports = req.onBlockReports;
    CalibrationPipeline pipeline(*model, options);
    pipeline.checkShapes(tree);

    std::unique_ptr<FakeQuantCheckpointWriter> writer;
    if (!req.outDir.empty()) {
        writer = std::make_unique<FakeQuantCheckpointWriter>(*handle.checkpoint, req.modelDir,
                                                             req.outDir, model->numBlocks());
        writer->writeLeading();
    }
    BlockSink sink;
    if (writer)
        sink = [&writer](int index, DecoderBlock& block) { writer->writeBlock(index, block); };

    const auto evalStart = std::chrono::steady_clock::now();
    PipelineResult result = pipeline.run(calib, evalIds, progress, sink);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - evalStart).count();
    if (writer)
        writer->commit(recipe.toOrderedJson().dump(2) + "\n");

    outcome.skipped = result.skipped;
    outcome.blockSeconds = result.blockSeconds;
    if (req.evaluate) {
        PerplexityResult p;
        p.tokens = int64_t(evalTokens.size());
        p.windows = evalIds.size(0);
        p.seqLen = evalIds.size(1);
        p.predicted = result.evalPredicted;
        p.meanNll = result.evalNllSum / double(result.evalPredicted);
        p.perplexity = std::exp(p.meanNll);
        p.seconds = seconds;
        p.tokensPerSecond = seconds > 0 ? double(p.windows * p.seqLen) / seconds : 0.0;
        p.device = req.compute.device.str();
        p.dtype = dtypeLabel(req.compute.dtype);
        outcome.perplexity = p;
    }
    AnalysisReport& report = outcome.report;
    report.model = handle.directory;
    report.recipe = recipe.toJson();
    report.calibrationSamples = calib.size(0);
    report.seqLen = calib.size(1);
    report.layers = std::move(result.layers);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return outcome;
}

} // namespace qs
