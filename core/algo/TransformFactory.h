#pragma once

#include "calib/BlockTransform.h"

#include <memory>
#include <string>
#include <vector>

namespace qs {

struct AlgorithmSpec;

// The transforms of a recipe's algorithms, in recipe order. Throws qs::Error(source,
// "algorithms[i].name", why) for an algorithm the engine cannot run yet: a recipe field is
// honoured or refused, never ignored.
std::vector<std::unique_ptr<BlockTransform>>
makeBlockTransforms(const std::vector<AlgorithmSpec>& algorithms, const std::string& source);

// Whether the engine has a transform for `algorithm` (a catalog name): what the catalog's
// `runnable` must say (tests/core/algo/tst_transformfactory.cpp keeps the two in step).
bool hasBlockTransform(const std::string& algorithm);

} // namespace qs
