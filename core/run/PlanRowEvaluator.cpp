#include "run/PlanRowEvaluator.h"

#include "calib/CalibrationPasses.h"
#include "eval/WindowShards.h"
#include "model/ForwardThreads.h"
#include "recipe/ExpertName.h"

#include <ATen/ATen.h>

#include <cctype>
#include <cmath>

namespace qs {

std::string expertRowName(const std::string& layer) {
    const ExpertName e = splitExpertName(layer);
    return e.experts.empty() ? layer : e.experts + ".*." + e.linear;
}

namespace {

// Every plan off: the full-precision model.
const PlanFilter kNothingQuantized = [](const LayerPlan&) { return PlanParts{false, false}; };

} // namespace

PlanFilter onlyLayersQuantized(std::set<std::string> layers) {
    return [layers = std::move(layers)](const LayerPlan& p) {
        return layers.count(p.name) ? PlanParts{true, !p.outputIsKvCache} : PlanParts{false, false};
    };
}

PipelineOptions planKeepingOptions(const PreparedRun& prep) {
    PipelineOptions options;
    options.mode = prep.recipe.calibration.mode;
    options.maxBatchTokens = batchTokensFor(prep.model->compute().device);
    options.keepPlans = true;
    options.transforms = prep.transforms;
    return options;
}

PlanRowEvaluator::PlanRowEvaluator(DecoderModel& model, at::Tensor evaluation,
                                   int64_t maxBatchTokens)
    : m_model(model), m_evaluation(std::move(evaluation)), m_maxBatchTokens(maxBatchTokens),
      m_seqLen(m_evaluation.size(1)), m_predicted(m_evaluation.size(0) * (m_seqLen - 1)) {}

PlanRowEvaluator::Measured
PlanRowEvaluator::measureReference(CalibrationPipeline& pipeline,
                                   std::vector<std::vector<LayerPlan>>& plans,
                                   const PipelineProgress& progress) {
    m_embedded = pipeline.embedWindows(m_evaluation);
    m_referenceInputs.clear();
    m_referenceLast = pipeline.forwardWithPlans(plans, kNothingQuantized, m_embedded, 0, m_seqLen,
                                                &m_referenceInputs, progress);
    Measured m;
    m.perplexity =
        std::exp(pipeline.scoreWindows(m_referenceLast, m_evaluation) / double(m_predicted));
    // Both sides run through this model's head.
    const at::Tensor last = m_referenceLast;
    const BaseLogitRows fromHidden = baseLogitsFromHidden(
        m_model, [last](int64_t f, int64_t n) { return last.narrow(0, f, n); }, m_seqLen);
    const int64_t vocab = m_model.config().vocabSize;
    if (m_predicted * vocab * 4 <= kCachedLogitBytes) {
        m_referenceLogits =
            computeBaseLogits(fromHidden, m_evaluation.size(0), m_seqLen, m_maxBatchTokens, vocab);
        const at::Tensor logits = m_referenceLogits;
        m_reference = [logits](int64_t f, int64_t n) { return logits.narrow(0, f, n); };
    } else {
        m_reference = fromHidden;
    }
    return m;
}

PlanRowEvaluator::Measured
PlanRowEvaluator::measure(CalibrationPipeline& pipeline, std::vector<std::vector<LayerPlan>>& plans,
                          const PlanFilter& filter, const at::Tensor& start, int fromBlock,
                          std::vector<at::Tensor>* blockInputs, const PipelineProgress& progress) {
    const at::Tensor last =
        pipeline.forwardWithPlans(plans, filter, start, fromBlock, m_seqLen, blockInputs, progress);
    FidelitySamples samples;
    Measured m;
    m.perplexity = std::exp(pipeline.scoreWindows(last, m_evaluation,
                                                  [&](int64_t first, const at::Tensor& logits) {
                                                      compareScoredBatch(m_reference, first, logits,
                                                                         m_evaluation, samples);
                                                  }) /
                            double(m_predicted));
    m.fidelity = summarizeBriefly(samples);
    return m;
}

std::map<std::string, double>
PlanRowEvaluator::localErrorEnergy(std::vector<std::vector<LayerPlan>>& plans, int block,
                                   const std::set<std::string>& layers) {
    std::unique_ptr<DecoderBlock> loaded = m_model.loadBlock(block);
    std::vector<LayerPlan>& blockPlans = plans.at(size_t(block));
    BlockQuantHook hook(blockPlans, kNothingQuantized);
    const BlockProgress progress({}, m_model.numBlocks());
    BlockRun run(*loaded, blockPlans, hook, progress, m_maxBatchTokens, kNothingQuantized);
    pass::setWeights(run, /*quantized=*/false);
    hook.setMode(BlockQuantHook::Mode::Reference);
    ForwardContext ctx = m_model.makeContext(m_seqLen);
    ctx.hook = &hook;
    const at::Tensor& stream = referenceInput(block);
    const int64_t rows = stream.size(0), size = windowsPerBatch(m_maxBatchTokens, m_seqLen);
    const SmallForwardGuard threads(size * m_seqLen, stream.size(-1), /*besideOwnBlasPool=*/false);
    // Summed on the device, read once at the end (no host sync per layer and batch).
    std::map<std::string, at::Tensor> sums;
    for (int64_t b = 0; b < rows; b += size) {
        hook.setCapture(true);
        loaded->forward(stream.narrow(0, b, std::min(size, rows - b)), ctx);
        for (size_t i = 0; i < blockPlans.size(); ++i) {
            const LayerPlan& p = blockPlans[i];
            const auto in = hook.inputs().find(p.name);
            if (!layers.count(p.name) || !p.quantized() || in == hook.inputs().end())
                continue;
            const at::Tensor& bias = run.linears[i]->bias;
            const at::Tensor yq = p.quantizeOutput(
                at::linear(p.quantizeInput(in->second), p.weight.dequantized, bias));
            // As Analyze: a layer AWQ clipped is compared with its weight before the clip.
            const at::Tensor y = p.weight.beforeAlgorithm.defined()
                                     ? at::linear(in->second, p.weight.beforeAlgorithm, bias)
                                     : hook.outputs().at(p.name);
            const at::Tensor part = (yq - y).square().sum(at::kDouble);
            at::Tensor& sum = sums[p.name];
            sum = sum.defined() ? sum + part : part;
        }
    }
    hook.setCapture(false);
    std::map<std::string, double> energy;
    for (const auto& [name, sum] : sums)
        energy[name] = sum.item<double>();
    return energy;
}

} // namespace qs
