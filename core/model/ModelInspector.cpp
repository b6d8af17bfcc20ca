#include "model/ModelInfo.h"
#include "model/ModelLoader.h"

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
        {"intermediate_size", std::to_string(c.intermediateSize)},
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
        out.emplace_back("rms_norm_eps", number(c.normEps));
        out.emplace_back("rope_theta", number(c.ropeTheta));
        out.emplace_back("rope_scaling", c.ropeScaling ? c.ropeScaling->type : "none");
    }
    if (c.slidingWindow > 0)
        out.emplace_back("sliding_window", std::to_string(c.slidingWindow));
    return out;
}

} // namespace

ModelInfo inspectModel(const std::string& directory) {
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
    return info;
}

} // namespace qs
