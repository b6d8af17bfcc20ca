#pragma once

#include "io/Checkpoint.h"
#include "model/DecoderModel.h"
#include "model/ModelConfig.h"
#include "model/ModelFamily.h"

#include <memory>
#include <string>

namespace qs {

// A checkpoint folder opened for computation: parsed config, family, lazily mapped weights.
struct ModelHandle {
    std::string directory;
    ModelConfig config;
    const ModelFamily* family = nullptr;
    std::shared_ptr<const Checkpoint> checkpoint;

    // Validates every tensor's presence and shape against the config (headers only).
    ModuleNode moduleTree() const { return family->buildTree(config, *checkpoint); }
    std::unique_ptr<DecoderModel> instantiate(const ComputeOptions& compute) const {
        return family->create(config, checkpoint, compute);
    }
};

// Opens config.json and the safetensors headers of `directory`; qs::Error on any problem.
ModelHandle openModelHandle(const std::string& directory);

// Runs a whole model with all blocks resident on the compute device: evaluation and generation
// on models that fit. (Streaming calibration drives DecoderModel block by block instead.)
class ModelRunner {
public:
    explicit ModelRunner(std::unique_ptr<DecoderModel> model);
    DecoderModel& model() { return *m_model; }
    // Loads every block; `progress(done, total)` returning false throws qs::Cancelled.
    void loadAll(const std::function<bool(int, int)>& progress = {});
    // ids [B, T] → float32 logits [B, T, V].
    at::Tensor forward(const at::Tensor& ids);

private:
    std::unique_ptr<DecoderModel> m_model;
    std::vector<std::unique_ptr<DecoderBlock>> m_blocks;
};

} // namespace qs
