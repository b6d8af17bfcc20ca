// The recipe search suites' model and base run: a small synthetic Llama (2 blocks of q/k/v, o,
// gate/up, down; 64 wide, MLP 160) and a recipe without schemes that calibrates on 4 windows
// of 32 tinystories-calib tokens and evaluates on 5 windows of 48 tinystories-eval tokens; and
// how a request is refused.
#pragma once

#include "TestSupport.h"

#include "recipe/RecipeFlags.h"
#include "run/RunRequest.h"
#include "run/SchemeSearch.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <QString>

#include <string>

namespace qs::test {

// Writes the model under tempDir(`tag`) and returns its folder.
inline QString writeSearchTestModel(const QString& tag) {
    qs::SyntheticModelOptions o;
    o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 2, o.numHeads = 4, o.numKvHeads = 2,
    o.seed = 9;
    o.outDir = (tempDir(tag) + "/model").toStdString();
    qs::writeSyntheticModel(o);
    return QString::fromStdString(o.outDir);
}

inline qs::RunRequest searchTestRun(const QString& model) {
    qs::QuantFlags flags;
    flags.calibData = sharedPath("data/tinystories-calib.txt").toStdString();
    flags.numCalibData = 4;
    flags.seqLen = 32;
    qs::RunRequest req;
    req.modelDir = model.toStdString();
    req.recipe = qs::recipeFromFlags(flags);
    req.recipe.evaluation.dataPath = sharedPath("data/tinystories-eval.txt").toStdString();
    req.recipe.evaluation.seqLen = 48;
    req.recipe.evaluation.maxWindows = 5;
    return req;
}

// The flag (the qs::Error's source) a search request is refused by, or "(no error)".
inline std::string searchRefusal(const qs::SchemeSearchRequest& q) {
    try {
        qs::runSchemeSearch(q);
    } catch (const qs::Error& e) {
        return e.source();
    }
    return "(no error)";
}

} // namespace qs::test
