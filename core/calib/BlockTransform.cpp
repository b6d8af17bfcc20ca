#include "calib/BlockTransform.h"

#include "recipe/Recipe.h"
#include "util/Error.h"

namespace qs {

std::vector<std::unique_ptr<BlockTransform>>
makeBlockTransforms(const std::vector<AlgorithmSpec>& algorithms, const std::string& source) {
    std::vector<std::unique_ptr<BlockTransform>> transforms;
    for (size_t i = 0; i < algorithms.size(); ++i)
        // The catalog (AlgorithmCatalog.h) validates names and parameters; none has an engine
        // implementation yet, so a recipe naming one is refused rather than run without it.
        throw Error(source, "algorithms[" + std::to_string(i) + "].name",
                    "the engine cannot run '" + algorithms[i].name +
                        "' yet; remove it from the recipe to quantize with round-to-nearest");
    return transforms;
}

} // namespace qs
