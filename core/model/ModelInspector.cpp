#include "io/GgufArchitecture.h"
#include "io/GgufFile.h"
#include "io/GgufFolder.h"
#include "model/ModelInfo.h"
#include "model/ModelLoader.h"
#include "model/QuarkFolder.h"
#include "util/Strings.h"

#include <QDir>
#include <QFileInfo>

#include <sstream>

namespace qs {

namespace {

std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

std::vector<std::pair<std::string, std::string>> summarize(const ModelConfig& c) {
    std::vector<std::pair<std::string, std::string>> out{
        {"model_type", c.modelType},
        {"hidden_size", std::to_string(c.hiddenSize)},
        // Llama 4: the dense MLP's width is intermediate_size_mlp (its intermediate_size is
        // the experts')
        {c.raw.contains("intermediate_size_mlp") ? "intermediate_size_mlp" : "intermediate_size",
         std::to_string(c.intermediateSize)},
        {"num_hidden_layers", std::to_string(c.numLayers)},
        {"num_attention_heads", std::to_string(c.numHeads)},
        {"num_key_value_heads", std::to_string(c.numKvHeads)},
        {"head_dim", std::to_string(c.headDim)},
        {"vocab_size", std::to_string(c.vocabSize)},
        {"max_position_embeddings", std::to_string(c.maxPositions)},
        {"hidden_act", c.hiddenAct},
        {"tie_word_embeddings", c.tieWordEmbeddings ? "true" : "false"},
        {"torch_dtype", c.torchDtype},
    };
    if (c.modelType != "opt") {
        out.emplace_back(c.layout.layerNorm ? "layer_norm_eps" : "rms_norm_eps", number(c.normEps));
        out.emplace_back("rope_theta", number(c.rope.theta));
        out.emplace_back("rope_type", c.rope.type);
        if (c.rope.partialRotaryFactor != 1.0)
            out.emplace_back("rotary_dims", std::to_string(int64_t(double(c.headDim) *
                                                                   c.rope.partialRotaryFactor)) +
                                                " of " + std::to_string(c.headDim));
        if (c.layout.ropeInterleaved)
            out.emplace_back("rope_pairs", "interleaved (2i, 2i+1)");
        if (c.rope.type != "default")
            out.emplace_back("rope_factor", number(c.rope.factor));
        if (c.slidingRope)
            out.emplace_back("rope_theta (sliding layers)", number(c.slidingRope->theta));
    }
    if (c.slidingWindow > 0) {
        int64_t sliding = 0;
        for (int64_t i = 0; i < c.numLayers; ++i)
            sliding += c.slides(i) ? 1 : 0;
        out.emplace_back("sliding_window", std::to_string(c.slidingWindow) + " (" +
                                               std::to_string(sliding) + " of " +
                                               std::to_string(c.numLayers) + " layers)");
    }
    if (c.mla.kvLoraRank > 0) {
        const MlaConfig& m = c.mla;
        out.emplace_back("attention",
                         "multi-head latent: q rank " +
                             (m.qLoraRank > 0 ? std::to_string(m.qLoraRank) : std::string("full")) +
                             ", kv latent " + std::to_string(m.kvLoraRank) + ", q/k per head " +
                             std::to_string(m.nopeDim) + " + rope " + std::to_string(m.ropeDim) +
                             ", v " + std::to_string(m.vHeadDim));
    }
    if (c.moe.numExperts > 0) {
        int64_t sparse = 0;
        for (int64_t i = 0; i < c.numLayers; ++i)
            sparse += c.isMoeLayer(i) ? 1 : 0;
        out.emplace_back("experts", std::to_string(c.moe.numExperts) + ", top-" +
                                        std::to_string(c.moe.topK) + " (" + std::to_string(sparse) +
                                        " MoE layers)");
        out.emplace_back("expert_intermediate_size", std::to_string(c.moe.expertIntermediate));
        out.emplace_back("top-k renormalised", c.moe.normTopK ? "yes" : "no");
        if (c.moe.sigmoidScores)
            out.emplace_back("routing", "sigmoid, correction bias, " +
                                            std::to_string(c.moe.topKGroups) + " of " +
                                            std::to_string(c.moe.numGroups) + " groups, x " +
                                            number(c.moe.routedScaling));
        if (c.moe.sharedIntermediate > 0)
            out.emplace_back("shared expert",
                             std::to_string(c.moe.sharedIntermediate) +
                                 (c.moe.sharedGateName.empty() ? "" : ", sigmoid-gated"));
    }
    if (c.layout.attnSoftcap > 0)
        out.emplace_back("attn_logit_softcapping", number(c.layout.attnSoftcap));
    if (c.layout.finalSoftcap > 0)
        out.emplace_back("final_logit_softcapping", number(c.layout.finalSoftcap));
    if (c.layout.parallelBlock)
        out.emplace_back("block", std::string("parallel attention + MLP under one ") +
                                      (c.layout.layerNorm ? "LayerNorm" : "RMSNorm") +
                                      (c.layout.normBias ? " with bias" : ""));
    if (c.layout.logitScale != 1.0)
        out.emplace_back("logit_scale", number(c.layout.logitScale));
    // Llama 4
    if (!c.layout.ropeLayer.empty()) {
        int64_t nope = 0;
        for (bool r : c.layout.ropeLayer)
            nope += r ? 0 : 1;
        out.emplace_back("NoPE layers",
                         std::to_string(nope) + " of " + std::to_string(c.numLayers) +
                             (c.layout.tempScale > 0 ? ", q x (1 + " + number(c.layout.tempScale) +
                                                           " log1p(floor((pos + 1) / " +
                                                           number(c.layout.tempFloor) + ")))"
                                                     : std::string()));
    }
    if (c.layout.l2QkNorm)
        out.emplace_back("qk_norm", "L2 without weight, after RoPE");
    if (c.layout.attentionChunk > 0) {
        int64_t chunked = 0;
        for (bool b : c.layout.chunkedLayer)
            chunked += b ? 1 : 0;
        out.emplace_back("attention_chunk_size", std::to_string(c.layout.attentionChunk) + " (" +
                                                     std::to_string(chunked) + " of " +
                                                     std::to_string(c.numLayers) + " layers)");
    }
    if (c.moe.scoreScalesInput)
        out.emplace_back("routing", "top-k logits; sigmoid of the logit scales the expert input");
    return out;
}

// The linears (and LM head) of the tree: the layers a stored scheme can belong to.
std::vector<const ModuleNode*> storableLayers(const ModuleNode& tree) {
    std::vector<const ModuleNode*> layers;
    tree.collect("linear", layers);
    tree.collect("head", layers);
    return layers;
}

StoredSchemes quarkStoredSchemes(const std::string& directory, const ModuleNode& tree) {
    StoredSchemes stored;
    const QuarkFolderInfo quark = inspectQuarkFolder(directory);
    if (!quark.realQuantized)
        return stored;
    stored.format = "AMD Quark hf_format, real quantized (pack " + quark.packMethod + ")";
    for (const ModuleNode* layer : storableLayers(tree))
        stored.layers[layer->name] = StoredSchemes::kStoredFloat;
    for (const auto& [layer, scheme] : quark.layers)
        stored.layers[layer] = scheme;
    return stored;
}

// The ggml type of each linear's weight, e.g. "Q4_0"; F32/F16/BF16 weights are stored as such.
StoredSchemes ggufStoredSchemes(const std::string& ggufPath, const ModuleNode& tree) {
    StoredSchemes stored;
    const auto file = GgufFile::open(ggufPath);
    stored.format = "GGUF v" + std::to_string(file->header().version);
    std::map<std::string, std::string> typeOf; // Hugging Face layer name -> ggml type
    const GgufValue* archName = file->header().find("general.architecture");
    const GgufArchitecture* arch = archName && archName->type == GgufValueType::String
                                       ? findGgufArchitecture(archName->s)
                                       : nullptr;
    if (!arch)
        arch = &ggufLlamaArchitecture();
    for (const GgufTensorInfo& t : file->header().tensors) {
        std::vector<std::string> names; // a stacked tensor: one per expert
        if (ggufIsStacked(*arch, t.name) && t.dims.size() == 3)
            for (int e = 0; e < int(t.dims[2]); ++e)
                names.push_back(hfNameOf(*arch, t.name, e));
        else
            names.push_back(hfNameOf(*arch, t.name));
        const std::string suffix = ".weight";
        for (const std::string& hf : names)
            if (hf.size() > suffix.size() &&
                hf.compare(hf.size() - suffix.size(), suffix.size(), suffix) == 0)
                typeOf[hf.substr(0, hf.size() - suffix.size())] = ggmlTypeTraits(t.type).name;
    }
    for (const ModuleNode* layer : storableLayers(tree)) {
        auto it = typeOf.find(layer->name);
        // A tied LM head has no tensor of its own: it is the embedding's.
        if (it == typeOf.end() && layer->kind == "head")
            it = typeOf.find("model.embed_tokens");
        if (it != typeOf.end())
            stored.layers[layer->name] = it->second;
    }
    return stored;
}

} // namespace

ModelInfo inspectModel(const std::string& directory, const std::string& sourceFile) {
    const ModelHandle h = openModelHandle(directory);
    ModelInfo info;
    info.directory = QFileInfo(QString::fromStdString(directory)).absoluteFilePath().toStdString();
    info.family = h.family->name();
    info.architecture = h.config.architecture;
    info.configSummary = summarize(h.config);
    info.checkpointFiles = h.checkpoint->files();
    info.checkpointBytes = h.checkpoint->totalBytes();
    info.tree = h.moduleTree();
    info.totalParameters = info.tree.parameters;
    const QDir dir(QString::fromStdString(directory));
    std::string tok;
    for (const char* f : {"tokenizer.model", "tokenizer.json", "vocab.json"})
        if (dir.exists(f))
            tok += (tok.empty() ? "" : " + ") + std::string(f);
    info.tokenizerFiles = tok.empty() ? "none" : tok;
    info.sourceFile = sourceFile;
    info.stored = sourceFile.empty() ? quarkStoredSchemes(directory, info.tree)
                                     : ggufStoredSchemes(sourceFile, info.tree);
    return info;
}

} // namespace qs
