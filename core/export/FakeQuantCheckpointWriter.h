#pragma once

#include "io/Checkpoint.h"
#include "model/DecoderModel.h"

#include <memory>
#include <string>

namespace qs {

// Writes a fake-quantized Hugging Face checkpoint while the pipeline streams blocks: tensors in
// the input checkpoint's dtypes (a quantized linear's weight replaced by its fake-quantized
// values), everything else copied byte for byte, plus config, tokenizer files and the recipe.
// Everything goes to a temporary folder beside `outDir` that commit() renames into place, so a
// failed or cancelled run leaves no half-written output.
class FakeQuantCheckpointWriter {
public:
    FakeQuantCheckpointWriter(const Checkpoint& source, const std::string& sourceDir,
                              const std::string& outDir, int numBlocks);
    ~FakeQuantCheckpointWriter();

    // Tensors that precede block 0 (embeddings); called once before the first block.
    void writeLeading();
    // Block `index` in its final state (quantized weights in place).
    void writeBlock(int index, DecoderBlock& block);
    // Remaining tensors, the side files and `recipeJson` as quantscope_recipe.json; then the
    // folder is renamed into place (a previous output there is replaced).
    void commit(const std::string& recipeJson);

private:
    void copyRaw(const std::string& name);
    void writeNextUntil(int blockLimit);

    const Checkpoint& m_source;
    std::string m_sourceDir, m_outDir, m_tempDir;
    std::vector<TensorInfo> m_layout;
    std::vector<int> m_blockOf; // block index per layout entry (-1 before, INT_MAX after)
    size_t m_next = 0;
    std::unique_ptr<class SafetensorsWriter> m_writer;
    bool m_committed = false;
};

} // namespace qs
