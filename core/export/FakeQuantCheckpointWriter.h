#pragma once

#include "export/ExportFolder.h"
#include "export/Exporter.h"

#include <memory>
#include <string>

namespace qs {

// Writes a fake-quantized Hugging Face checkpoint while the pipeline streams blocks: tensors in
// the input checkpoint's dtypes (a quantized linear's weight replaced by its fake-quantized
// values), everything else copied byte for byte, plus config, tokenizer files and the recipe.
// Everything goes to a temporary folder beside `outDir` that commit() renames into place, so a
// failed or cancelled run leaves no half-written output. Registry format "fake" (recipe
// export target "hf_fake").
class FakeQuantCheckpointWriter : public Exporter {
public:
    explicit FakeQuantCheckpointWriter(const ExportContext& context);
    ~FakeQuantCheckpointWriter() override;

    std::string format() const override { return "fake"; }
    // Tensors that precede block 0 (embeddings); called once before the first block.
    void writeLeading() override;
    // Block `index` in its final state (quantized weights in place).
    void writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) override;
    // Remaining tensors, the side files and `recipeJson` as quantscope_recipe.json; then the
    // folder is renamed into place (a previous output there is replaced).
    void commit(const std::string& recipeJson) override;

private:
    void copyRaw(const std::string& name);
    void writeNextUntil(int blockLimit);

    const Checkpoint& m_source;
    std::string m_sourceDir, m_outDir;
    ExportFolder m_folder;
    bool m_headUntied = false; // ExportContext::headUntied
    std::vector<TensorInfo> m_layout;
    std::vector<int> m_blockOf; // block index per layout entry (-1 before, INT_MAX after)
    size_t m_next = 0;
    std::unique_ptr<class SafetensorsWriter> m_writer;
};

} // namespace qs
