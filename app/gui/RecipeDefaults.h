#pragma once

#include "recipe/Recipe.h"

#include <QString>

namespace qs {

// What a freshly opened model proposes, so that Analyze works on the first click and fills the
// error columns: a scheme (int8, the walk-through's first recipe: weights and activations,
// every layer fits it) and a calibration text: the last one a run used (kept in QSettings), else
// a calibration text shipped beside the model (a data/ folder holding *calib*.txt in the
// model's folder or up to three folders above it, as the project's shared models have; the
// TinyStories sample first); and the evaluation text the last Evaluate or Sensitivity used.
class RecipeDefaults {
public:
    static constexpr const char* DefaultScheme = "int8";

    // `current` with the defaults filled in where it has nothing (no scheme anywhere, no
    // calibration text); a recipe the user has written or loaded comes back as it is.
    static Recipe propose(const Recipe& current, const QString& modelDirectory);
    // Whether `recipe` is the untouched default one (nothing chosen yet).
    static bool isUntouched(const Recipe& recipe);

    // The calibration text proposed for a model: remembered, else found beside it; empty when
    // neither is there (any more).
    static QString calibrationFor(const QString& modelDirectory);
    static QString calibrationNear(const QString& modelDirectory);
    // Remembers the calibration text a run used for the next model opened.
    static void rememberCalibration(const QString& path);
    // The evaluation text the last evaluation used, when it is still there; empty otherwise.
    static QString lastEvaluation();
    static void rememberEvaluation(const QString& path);

    // The built-in demo model's calibration text, written once into `demoDirectory`/data/ where
    // calibrationNear() finds it, so Analyze works on the demo's first click (issue 28): the
    // text embedded in the GUI. Returns its path, or empty (and `error` says why) when it cannot
    // be written; the demo then opens without one, as any other model.
    static QString ensureDemoCalibration(const QString& demoDirectory, QString* error);
};

} // namespace qs
