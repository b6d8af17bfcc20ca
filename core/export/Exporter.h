#pragma once

#include "calib/LayerPlan.h"
#include "export/ExportFormat.h"
#include "io/Checkpoint.h"
#include "model/DecoderModel.h"
#include "recipe/Recipe.h"

#include <cstdint>

#include <optional>
#include <string>
#include <vector>

namespace qs {

// What an exporter knows before the first block: the source checkpoint (tensors it copies as
// they are), the recipe as run, the model's quantizable linears and where to write.
struct ExportContext {
    const Checkpoint* source = nullptr;
    std::string sourceDir;
    std::string outDir;
    int numBlocks = 0;
    const Recipe* recipe = nullptr;
    std::vector<std::string> layerNames; // every block linear, model order
    // Linear modules the engine never quantizes (mixture-of-experts routers and Qwen1.5-MoE's
    // shared-expert gates: the tree's "router" nodes), model order. Formats whose loaders
    // quantize every Linear they are not told to skip name them (Quark's `exclude`).
    std::vector<std::string> fullPrecisionLinears;
    // The run's format options (ExportFormat.h: option name -> value); each exporter reads the
    // options its format declares, the declared default where the map has none.
    ExportOptions options;
    // The source ties lm_head to the embedding, but `source` holds a head of its own (a rotated
    // model: writeTransformedOuterTensors): the export writes it and says
    // tie_word_embeddings false.
    bool headUntied = false;
};

// One output format, written while the pipeline streams blocks (it is the pipeline's
// BlockSink): writeLeading() before block 0, writeBlock() once per block in order with the
// block in its final state and its plans (codes, scales, zero points, frozen activation
// quantizers), commit() at the end. Everything goes to a temporary folder that commit() renames
// into place; an exporter destroyed without commit() removes it (ExportFolder).
//
// Each format's exporter is created by its row of the format table (FormatWriter.h).
class Exporter {
public:
    virtual ~Exporter() = default;
    virtual std::string format() const = 0;
    virtual void writeLeading() = 0;
    virtual void writeBlock(int index, DecoderBlock& block,
                            const std::vector<LayerPlan>& plans) = 0;
    // Remaining tensors, side files, `recipeJson` as quantscope_recipe.json; then the rename.
    virtual void commit(const std::string& recipeJson) = 0;
    // True when writeBlock reads a quantized linear only through its codes, scales and zero
    // points (never its float or fake-quantized weight) and takes the codes in any integer
    // dtype. A run that runs no forward pass may then release the float weights as soon as the
    // codes exist and narrow the codes (LayerPlan::releaseFloatWeights), which is what keeps a
    // weight-only export within about one block of memory.
    virtual bool readsOnlyCodes() const { return false; }
};

} // namespace qs
