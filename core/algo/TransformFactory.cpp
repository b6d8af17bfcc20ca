#include "algo/TransformFactory.h"

#include "algo/AutoSmoothQuantTransform.h"
#include "algo/AwqTransform.h"
#include "algo/GptqTransform.h"
#include "algo/RotationTransform.h"
#include "algo/SmoothQuantTransform.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

namespace qs {

std::vector<std::unique_ptr<BlockTransform>>
makeBlockTransforms(const std::vector<AlgorithmSpec>& algorithms, const std::string& source) {
    std::vector<std::unique_ptr<BlockTransform>> transforms;
    for (size_t i = 0; i < algorithms.size(); ++i) {
        // The catalog (AlgorithmCatalog.h) validates names and parameters; an algorithm without
        // an engine implementation is refused rather than run without it.
        const std::string field = "algorithms[" + std::to_string(i) + "]";
        const std::string where = source + " " + field;
        const nlohmann::json& params = algorithms[i].params;
        if (algorithms[i].name == "rotation") {
            // Rotation changes the residual stream of the whole model before any block pass, so
            // a recipe that lists it after another algorithm would not run in its stated order.
            if (i != 0)
                throw Error(source, field + ".name",
                            "rotation must be the first algorithm: it rotates the whole model "
                            "before the block passes (Quark's order: rotation, smoothquant, "
                            "gptq)");
            transforms.push_back(std::make_unique<algo::RotationTransform>(params, where));
            continue;
        }
        if (algorithms[i].name == "gptq") {
            transforms.push_back(std::make_unique<algo::GptqTransform>(params, where));
            continue;
        }
        if (algorithms[i].name == "smoothquant") {
            transforms.push_back(std::make_unique<algo::SmoothQuantTransform>(params, where));
            continue;
        }
        if (algorithms[i].name == "awq") {
            transforms.push_back(std::make_unique<algo::AwqTransform>(params, where));
            continue;
        }
        if (algorithms[i].name == "autosmoothquant") {
            transforms.push_back(std::make_unique<algo::AutoSmoothQuantTransform>(params, where));
            continue;
        }
        throw Error(source, field + ".name",
                    "the engine cannot run '" + algorithms[i].name +
                        "' yet; remove it from the recipe to quantize with round-to-nearest");
    }
    return transforms;
}

} // namespace qs
