#include "model/ModelFamily.h"

#include "util/Error.h"

namespace qs {

// Defined one per file in model/families/.
const ModelFamily& llamaFamily();
const ModelFamily& mistralFamily();
const ModelFamily& qwen2Family();
const ModelFamily& optFamily();
const ModelFamily& qwen3Family();
const ModelFamily& qwen3MoeFamily();
const ModelFamily& mixtralFamily();
const ModelFamily& gemma2Family();
const ModelFamily& gemma3TextFamily();
const ModelFamily& phi3Family();
const ModelFamily& phiFamily();
const ModelFamily& gptjFamily();
const ModelFamily& cohereFamily();

const std::vector<const ModelFamily*>& modelFamilies() {
    static const std::vector<const ModelFamily*> families{
        &llamaFamily(),   &mistralFamily(), &qwen2Family(),      &qwen3Family(), &qwen3MoeFamily(),
        &mixtralFamily(), &gemma2Family(),  &gemma3TextFamily(), &phi3Family(),  &optFamily(),
        &phiFamily(),     &gptjFamily(),    &cohereFamily()};
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

const ModelFamily& familyFor(const std::string& modelType, const std::string& source) {
    std::string known;
    for (const ModelFamily* f : modelFamilies())
        for (const std::string& t : f->modelTypes()) {
            if (t == modelType)
                return *f;
            known += (known.empty() ? "" : ", ") + t;
        }
    throw Error(source, "model_type",
                "unsupported model type '" + modelType + "' (supported: " + known + ")");
}

} // namespace qs
