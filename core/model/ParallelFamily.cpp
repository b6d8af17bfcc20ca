#include "model/ParallelFamily.h"

#include "io/Checkpoint.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

namespace qs {

namespace {

ModuleNode inner(const std::string& name, const std::string& kind, int block) {
    return ModuleNode{name, kind, {}, "", 0, block, {}};
}

} // namespace

void ParallelFamily::checkRotary(const ModelConfig& c, const std::string& field) {
    if (c.headDim % 2 != 0)
        throw Error(c.source, field, "rotary embeddings need an even head dimension");
    const int64_t rotary = int64_t(double(c.headDim) * c.rope.partialRotaryFactor);
    if (rotary % 2 != 0 || rotary < 2)
        throw Error(c.source, field,
                    "rotates " + std::to_string(rotary) + " of head_dim " +
                        std::to_string(c.headDim) + " dimensions; needs an even count");
}

ModuleNode ParallelFamily::buildTree(const ModelConfig& c, const Checkpoint& ckpt) const {
    const ParallelNames n = names();
    const int64_t H = c.hiddenSize, I = c.intermediateSize, V = c.vocabSize;
    const int64_t qOut = c.numHeads * c.headDim, kvOut = c.numKvHeads * c.headDim;
    const bool nb = c.layout.normBias;
    ModuleNode root = inner("model", "model", -1);
    root.children.push_back(weightLeaf(ckpt, n.embed, "embedding", {V, H}, -1));
    for (int i = 0; i < int(c.numLayers); ++i) {
        const std::string p = n.block(i);
        ModuleNode block = inner(p.substr(0, p.size() - 1), "block", i);
        const std::string a = p + n.attention;
        ModuleNode attn = inner(a, "attention", i);
        attn.children = {weightLeaf(ckpt, a + ".q_proj", "linear", {qOut, H}, i, c.attentionBias),
                         weightLeaf(ckpt, a + ".k_proj", "linear", {kvOut, H}, i, c.attentionBias),
                         weightLeaf(ckpt, a + ".v_proj", "linear", {kvOut, H}, i, c.attentionBias),
                         weightLeaf(ckpt, a + "." + n.out, "linear", {H, qOut}, i, c.outputBias)};
        ModuleNode mlp = inner(p + "mlp", "mlp", i);
        if (n.gated())
            mlp.children = {weightLeaf(ckpt, p + "mlp.gate_proj", "linear", {I, H}, i, c.mlpBias),
                            weightLeaf(ckpt, p + "mlp.up_proj", "linear", {I, H}, i, c.mlpBias),
                            weightLeaf(ckpt, p + "mlp.down_proj", "linear", {H, I}, i, c.mlpBias)};
        else
            mlp.children = {weightLeaf(ckpt, p + n.fcIn, "linear", {I, H}, i, c.mlpBias),
                            weightLeaf(ckpt, p + n.fcOut, "linear", {H, I}, i, c.mlpBias)};
        // The one norm precedes both sublayers, which run side by side.
        block.children = {weightLeaf(ckpt, p + n.norm, "norm", {H}, i, nb), std::move(attn),
                          std::move(mlp)};
        root.children.push_back(std::move(block));
    }
    root.children.push_back(weightLeaf(ckpt, n.finalNorm, "norm", {H}, -1, nb));
    if (c.tieWordEmbeddings) {
        // Tied: the head is the embedding matrix; shown, its parameters not counted twice.
        root.children.push_back(ModuleNode{"lm_head", "head", {V, H}, "tied", 0, -1, {}});
    } else {
        root.children.push_back(weightLeaf(ckpt, "lm_head", "head", {V, H}, -1, c.layout.headBias));
    }
    sumParameters(root);
    checkEveryTensorUsed(root, c, ckpt);
    return root;
}

std::unique_ptr<DecoderModel> ParallelFamily::create(const ModelConfig& config,
                                                     std::shared_ptr<const Checkpoint> ckpt,
                                                     const ComputeOptions& compute) const {
    return std::make_unique<ParallelModel>(config, std::move(ckpt), compute, names());
}

ScalingTemplate ParallelFamily::scalingTemplate(const ModelConfig& c) const {
    const ParallelNames n = names();
    const std::string a = n.attention + ".";
    ScalingTemplate t;
    // v_proj's output rows are o_proj's input columns (head by head; ScalingGroups repeats the
    // scales of grouped KV heads): 1/s on v's rows and bias, s on o's columns is exact, since
    // attention mixes v only across positions.
    t.groups = {{a + "v_proj", {a + n.out}, a + n.out, ""}};
    // SwiGLU: down(silu(gate) * up / s) with down's columns times s is exact. An ungated MLP
    // has an activation (GELU) between fc_in and fc_out, which a scale does not pass through.
    if (n.gated())
        t.groups.push_back({"mlp.up_proj", {"mlp.down_proj"}, "mlp.down_proj", ""});
    (void)c;
    return t;
}

} // namespace qs
