// libFuzzer target: a model folder's config.json and model.safetensors together (FuzzSupport.h:
// two parts), through what opening a model does: loadModelConfig, Checkpoint::open, the family's
// shape check of every tensor against the config (moduleTree), instantiation, and loading the
// first decoder block. A finding is a crash, a sanitizer report, an exception other than
// qs::Error, or a loaded block whose linear weights are not [out, in] matrices (__builtin_trap).
#include "FuzzSupport.h"
#include "model/ModelLoader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 2);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    if (!parts[0].empty())
        dir.write("config.json", parts[0]);
    if (!parts[1].empty())
        dir.write("model.safetensors", parts[1]);
    qsfuzz::expectCleanRefusal([&] {
        const qs::ModelHandle handle = qs::openModelHandle(dir.path());
        handle.moduleTree();
        const std::unique_ptr<qs::DecoderModel> model = handle.instantiate(qs::ComputeOptions{});
        if (model->numBlocks() < 1)
            return;
        const std::unique_ptr<qs::DecoderBlock> block = model->loadBlock(0);
        for (const qs::LinearLayer* linear : block->linears()) {
            if (!linear->weight.defined() || linear->weight.dim() != 2 || linear->name.empty())
                __builtin_trap();
            if (linear->bias.defined() &&
                (linear->bias.dim() != 1 || linear->bias.size(0) != linear->weight.size(0)))
                __builtin_trap();
        }
    });
    return 0;
}
