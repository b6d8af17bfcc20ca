#include "algo/TransformFactory.h"

#include "algo/AutoSmoothQuantTransform.h"
#include "algo/AwqTransform.h"
#include "algo/GptqTransform.h"
#include "algo/RotationTransform.h"
#include "algo/SmoothQuantTransform.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

#include <map>

namespace qs {

namespace {

using TransformMaker = std::unique_ptr<BlockTransform> (*)(const nlohmann::json& params,
                                                           const std::string& where);

template <class T>
std::unique_ptr<BlockTransform> make(const nlohmann::json& params, const std::string& where) {
    return std::make_unique<T>(params, where);
}

template <algo::HessianSolver S>
std::unique_ptr<BlockTransform> makeSolver(const nlohmann::json& params, const std::string& where) {
    return std::make_unique<algo::GptqTransform>(params, where, S);
}

// The transform of each algorithm of the catalog (recipe/AlgorithmCatalog.cpp) the engine runs:
// adding an algorithm is its transform's file pair, its row in the catalog and its row here.
const std::map<std::string, TransformMaker>& transformMakers() {
    static const std::map<std::string, TransformMaker> makers = {
        {"rotation", &make<algo::RotationTransform>},
        {"smoothquant", &make<algo::SmoothQuantTransform>},
        {"autosmoothquant", &make<algo::AutoSmoothQuantTransform>},
        {"awq", &make<algo::AwqTransform>},
        {"gptq", &make<algo::GptqTransform>},
        {"gptaq", &makeSolver<algo::HessianSolver::Gptaq>},
        {"qronos", &makeSolver<algo::HessianSolver::Qronos>},
    };
    return makers;
}

} // namespace

bool hasBlockTransform(const std::string& algorithm) {
    return transformMakers().count(algorithm) > 0;
}

std::vector<std::unique_ptr<BlockTransform>>
makeBlockTransforms(const std::vector<AlgorithmSpec>& algorithms, const std::string& source) {
    std::vector<std::unique_ptr<BlockTransform>> transforms;
    for (size_t i = 0; i < algorithms.size(); ++i) {
        // The catalog (AlgorithmCatalog.h) validates names and parameters; an algorithm without
        // an engine implementation is refused rather than run without it.
        const std::string field = "algorithms[" + std::to_string(i) + "]";
        const std::string& name = algorithms[i].name;
        const auto maker = transformMakers().find(name);
        if (maker == transformMakers().end())
            throw Error(source, field + ".name",
                        "the engine cannot run '" + name +
                            "' yet; remove it from the recipe to quantize with round-to-nearest");
        // Stage 0 (rotation) changes the residual stream of the whole model before any block
        // pass, so a recipe that lists it after another algorithm would not run in its stated
        // order.
        const AlgorithmInfo* info = findAlgorithmInfo(name);
        if (info && info->stage == 0 && i != 0)
            throw Error(source, field + ".name",
                        name + " must be the first algorithm: it rotates the whole model "
                               "before the block passes (Quark's order: rotation, smoothquant, "
                               "gptq)");
        transforms.push_back(maker->second(algorithms[i].params, source + " " + field));
    }
    return transforms;
}

} // namespace qs
