#include "export/TensorBlocks.h"

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <climits>
#include <regex>

namespace qs {

int blockOfTensorName(const std::string& name) {
    // "model.layers.3.", GPT-J's "transformer.h.3." and DBRX's "transformer.blocks.3."
    static const std::regex re(R"((?:^|\.)(?:layers|h|blocks)\.(\d+)\.)");
    std::smatch m;
    if (std::regex_search(name, m, re))
        return std::stoi(m[1].str());
    const bool embedding = name.find("embed") != std::string::npos ||
                           name.rfind("transformer.wte.", 0) == 0; // GPT-J's token embedding
    return embedding ? -1 : INT_MAX;
}

std::map<std::string, const at::Tensor*> blockTensors(DecoderBlock& block,
                                                      const std::vector<LayerPlan>& plans) {
    std::map<std::string, const at::Tensor*> out;
    bool rescaled = false;
    for (const LayerPlan& p : plans)
        rescaled = rescaled || !p.transforms.empty();
    for (LinearLayer* l : block.linears()) {
        out[l->name + ".weight"] = &l->weight;
        if (rescaled && l->bias.defined())
            out[l->name + ".bias"] = &l->bias;
    }
    if (rescaled)
        for (const BlockNorm& n : block.norms()) {
            out[n.name + ".weight"] = n.weight;
            if (n.bias && n.bias->defined())
                out[n.name + ".bias"] = n.bias;
        }
    return out;
}

} // namespace qs
