// Shared by the scaling-algorithm tests: runs a model block by block on CPU in fp32 and lets a
// BlockTransform rescale each block from the block's own captured inputs, as the pipeline's
// capture and transform passes do, then returns the logits.
#pragma once

#include "TestSupport.h"

#include "calib/BlockTransform.h"
#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"
#include "model/ModelLoader.h"
#include "quant/SchemeRegistry.h"
#include "synth/SyntheticModel.h"

#include <ATen/ATen.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qs::test {

// Collects each linear's inputs ([rows, in]) as the capture pass does.
class InputCollector : public LinearHook {
public:
    std::map<std::string, std::vector<at::Tensor>> inputs;
    at::Tensor onInput(const LinearLayer& layer, const at::Tensor& x) override {
        inputs[layer.name].push_back(x.reshape({-1, x.size(-1)}).clone());
        return x;
    }
};

// Every linear's inputs over one forward of `block` on `input`, with the weights named in
// `weights` standing in for the block's own (put back afterwards).
inline std::map<std::string, std::vector<at::Tensor>>
captureWithWeights(DecoderBlock& block, const ForwardContext& ctx, const at::Tensor& input,
                   const std::map<std::string, at::Tensor>& weights) {
    std::map<std::string, at::Tensor> saved;
    for (LinearLayer* l : block.linears())
        if (weights.count(l->name)) {
            saved[l->name] = l->weight;
            l->weight = weights.at(l->name);
        }
    InputCollector collector;
    ForwardContext hooked = ctx;
    hooked.hook = &collector;
    block.forward(input, hooked);
    for (LinearLayer* l : block.linears())
        if (saved.count(l->name))
            l->weight = saved.at(l->name);
    return std::move(collector.inputs);
}

inline QString synthModel(const QString& name, SyntheticModelOptions o) {
    o.outDir = tempDir(name).toStdString();
    writeSyntheticModel(o);
    return QString::fromStdString(o.outDir);
}

// Plans for a block's linears: `scheme` on every linear (none: full precision).
inline std::vector<LayerPlan> plansFor(DecoderBlock& block,
                                       const std::optional<quant::QuantScheme>& scheme) {
    std::vector<LayerPlan> plans;
    for (const LinearLayer* l : block.linears()) {
        LayerPlan p;
        p.name = l->name;
        p.kind = l->kind;
        p.block = block.index();
        p.shape = {l->weight.size(0), l->weight.size(1)};
        p.scheme = scheme;
        plans.push_back(std::move(p));
    }
    return plans;
}

// fp32 logits of `ids` with `transform` (when given) applied to every block first; `plans`
// receives each block's plans (with what the transform recorded).
inline at::Tensor logitsWith(const QString& dir, const at::Tensor& ids, BlockTransform* transform,
                             const std::optional<quant::QuantScheme>& scheme = std::nullopt,
                             std::vector<std::vector<LayerPlan>>* plansOut = nullptr) {
    const ModelHandle h = openModelHandle(dir.toStdString());
    std::unique_ptr<DecoderModel> model = h.instantiate({});
    const ForwardContext ctx = model->makeContext(ids.size(1));
    at::Tensor hidden = model->embed(ids);
    for (int i = 0; i < model->numBlocks(); ++i) {
        std::unique_ptr<DecoderBlock> block = model->loadBlock(i);
        if (transform) {
            InputCollector collector;
            ForwardContext hooked = ctx;
            hooked.hook = &collector;
            block->forward(hidden, hooked);
            std::vector<LayerPlan> plans = plansFor(*block, scheme);
            BlockTransformInput in{*block, plans, collector.inputs};
            in.config = &model->config();
            in.stream = hidden;
            in.context = &ctx;
            transform->apply(in);
            if (plansOut)
                plansOut->push_back(std::move(plans));
        }
        hidden = block->forward(hidden, ctx);
    }
    return model->logits(hidden);
}

// Random token ids [rows, len] below `vocab`, from a fixed seed.
inline at::Tensor sampleTokens(int64_t rows, int64_t len, int64_t vocab, uint64_t seed) {
    at::manual_seed(seed);
    return at::randint(3, vocab, {rows, len}, at::kLong);
}

} // namespace qs::test
