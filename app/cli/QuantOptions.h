#pragma once

#include "calib/QuantizationRun.h"
#include "recipe/Recipe.h"

#include <QCommandLineParser>
#include <QStringList>

namespace qs::cli {

// Quark-style scheme flags (quantize_quark.py names, dashes or underscores) shared by eval,
// analyze and quantize. `calibSeqFlag` names the calibration window flag: "seq-len" for analyze
// and quantize (as Quark), "calib-seq-len" for eval, whose --seq-len is the evaluation window.
void addQuantOptions(QCommandLineParser& parser, const QString& calibSeqFlag);
// Rewrites Quark's multi-value flags into repeated single-value ones QCommandLineParser reads:
// "--exclude-layers a b" → "--exclude-layers=a --exclude-layers=b",
// "--layer-quant-scheme P S" → "--layer-quant-scheme=P<US>S".
QStringList expandMultiValueFlags(const QStringList& args);
// True when any scheme flag or --recipe was given.
bool hasQuantOptions(const QCommandLineParser& parser);
// --recipe (if given) with the flags applied over it; --save-recipe writes the result.
Recipe recipeFromOptions(const QCommandLineParser& parser, const QString& calibSeqFlag);
void saveRecipeIfAsked(const QCommandLineParser& parser, const Recipe& recipe);
// The run analyze and quantize share: model folder, recipe (saved when asked), --device,
// --dtype and --tokenizer. Requires a scheme flag or --recipe.
QuantizationRequest requestFromOptions(const QCommandLineParser& parser, const QString& modelDir);

} // namespace qs::cli
