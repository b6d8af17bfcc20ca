#include "model/ModelLoader.h"

#include "model/QuarkFolder.h"

#include "model/ConfigParser.h"
#include "util/Error.h"

#include <QFileInfo>

namespace qs {

ModelHandle openModelHandle(const std::string& directory) {
    if (!QFileInfo(QString::fromStdString(directory)).isDir())
        throw Error(directory, "",
                    QFileInfo::exists(QString::fromStdString(directory))
                        ? "not a folder (expected a Hugging Face checkpoint folder)"
                        : "not a folder: no such file or directory");
    ModelHandle h;
    h.directory = directory;
    h.config = loadModelConfig(directory);
    h.family = &familyFor(h.config.modelType, h.config.source);
    h.checkpoint = openCheckpointForCompute(directory); // Quark exports: dequantized
    return h;
}

ModelRunner::ModelRunner(std::unique_ptr<DecoderModel> model) : m_model(std::move(model)) {}

void ModelRunner::loadAll(const std::function<bool(int, int)>& progress) {
    const int n = m_model->numBlocks();
    for (int i = int(m_blocks.size()); i < n; ++i) {
        if (progress && !progress(i, n))
            throw Cancelled();
        m_blocks.push_back(m_model->loadBlock(i));
    }
}

at::Tensor ModelRunner::forward(const at::Tensor& ids) {
    loadAll();
    const ForwardContext ctx = m_model->makeContext(ids.size(1));
    at::Tensor h = m_model->embed(ids);
    for (auto& block : m_blocks)
        h = block->forward(h, ctx);
    return m_model->logits(h);
}

} // namespace qs
