#include "model/ModelFamily.h"

#include "util/Error.h"

#include <map>

namespace qs {

// Defined one per file in model/families/.
const ModelFamily& llamaFamily();
const ModelFamily& mistralFamily();
const ModelFamily& qwen2Family();
const ModelFamily& optFamily();
const ModelFamily& qwen3Family();
const ModelFamily& qwen3MoeFamily();
const ModelFamily& qwen2MoeFamily();
const ModelFamily& deepseekV3Family();
const ModelFamily& mixtralFamily();
const ModelFamily& gemma2Family();
const ModelFamily& gemma3TextFamily();
const ModelFamily& phi3Family();
const ModelFamily& phiFamily();
const ModelFamily& gptjFamily();
const ModelFamily& cohereFamily();
const ModelFamily& llama4TextFamily();

const std::vector<const ModelFamily*>& modelFamilies() {
    static const std::vector<const ModelFamily*> families{
        &llamaFamily(),    &mistralFamily(),  &qwen2Family(),      &qwen3Family(),
        &qwen3MoeFamily(), &mixtralFamily(),  &gemma2Family(),     &gemma3TextFamily(),
        &phi3Family(),     &optFamily(),      &phiFamily(),        &gptjFamily(),
        &cohereFamily(),   &qwen2MoeFamily(), &deepseekV3Family(), &llama4TextFamily()};
    return families;
}

ScalingTemplate ModelFamily::scalingTemplate(const ModelConfig& config) const {
    throw Error(config.source, "model_type",
                "'" + name() +
                    "' declares no scaling template (which linears share an input), "
                    "so SmoothQuant, AWQ and AutoSmoothQuant cannot run on it");
}

const ModelFamily* findFamily(const std::string& modelType) {
    for (const ModelFamily* f : modelFamilies())
        for (const std::string& t : f->modelTypes())
            if (t == modelType)
                return f;
    return nullptr;
}

std::vector<std::string> familiesWith(bool FamilyCapabilities::*capability) {
    std::vector<std::string> types;
    for (const ModelFamily* f : modelFamilies())
        if (f->capabilities().*capability)
            for (const std::string& t : f->modelTypes())
                types.push_back(t);
    return types;
}

const char* notSupportedYet(const std::string& modelType) {
    // Issue 31's families that no file under model/families/ reads yet, with what is missing:
    // the user learns why, not only that.
    static const std::map<std::string, const char*> reasons{
        {"dbrx", "DBRX stores each layer's experts fused (ffn.experts.mlp.w1/v1/w2: every "
                 "expert's rows in one 2-D tensor, w2 untransposed), which Quantscope cannot yet "
                 "quantize per expert nor export in Quark's per-expert layout"},
        {"gpt_oss", "gpt-oss stores its experts fused in 3-D tensors with biases (interleaved "
                    "gate/up, clamped SwiGLU), and its attention sinks are not implemented"}};
    const auto it = reasons.find(modelType);
    return it == reasons.end() ? nullptr : it->second;
}

const ModelFamily& familyFor(const std::string& modelType, const std::string& source) {
    std::string known;
    for (const ModelFamily* f : modelFamilies())
        for (const std::string& t : f->modelTypes()) {
            if (t == modelType)
                return *f;
            known += (known.empty() ? "" : ", ") + t;
        }
    if (const char* why = notSupportedYet(modelType))
        throw Error(source, "model_type",
                    "model type '" + modelType + "' is recognised but not supported yet: " + why +
                        " (supported: " + known + ")");
    throw Error(source, "model_type",
                "unsupported model type '" + modelType + "' (supported: " + known + ")");
}

} // namespace qs
