#pragma once

#include "recipe/Recipe.h"
#include "run/RunRequest.h"

#include <QCommandLineParser>
#include <QStringList>

#include <string>
#include <vector>

namespace qs::cli {

// Quark-style scheme flags (quantize_quark.py names, dashes or underscores) shared by eval,
// analyze and quantize. One meaning per name in every subcommand: --seq-len / --seq_len /
// --calib-seq-len is the calibration window (as Quark's --seq_len); the evaluation window is
// --eval-seq-len (addEvalWindowOptions).
void addQuantOptions(QCommandLineParser& parser);
// --eval-seq-len and --max-windows (eval, analyze --sensitivity).
void addEvalWindowOptions(QCommandLineParser& parser);
// The evaluation data flag's value (a Quark dataset name is refused as a UsageError) and the
// window options, each over the recipe's field where the flag is not given.
EvaluationSpec evaluationFromOptions(const QCommandLineParser& parser, const QString& dataFlag,
                                     const EvaluationSpec& recipe = {});
// Quark's --evaluation_dataset FILE and --skip_evaluation (quantize: evaluate after quantizing,
// as Quark's LLM PTQ flow does unless told to skip).
void addQuarkEvaluationOptions(QCommandLineParser& parser);
bool evaluatesAfterQuantizing(const QCommandLineParser& parser);
// --out / --output-dir / --output_dir and --model-export / --model_export (quantize).
void addOutputOptions(QCommandLineParser& parser);
// The output folder, and the export formats asked (Quark's --model_export names; "hf_format"
// when none). Formats this build cannot write are a UsageError.
std::string outputDirFromOptions(const QCommandLineParser& parser);
std::vector<std::string> exportFormatsFromOptions(const QCommandLineParser& parser);
// Rewrites Quark's multi-value flags into repeated single-value ones QCommandLineParser reads:
// "--exclude-layers a b" → "--exclude-layers=a --exclude-layers=b",
// "--layer-quant-scheme P S" → "--layer-quant-scheme=P<US>S".
QStringList expandMultiValueFlags(const QStringList& args);
// True when any scheme flag or --recipe was given.
bool hasQuantOptions(const QCommandLineParser& parser);
// --recipe (if given) with the flags applied over it. A bad flag value (unknown scheme, mode,
// algorithm) is a UsageError (exit 2); a bad --recipe file is a qs::Error (exit 1).
Recipe recipeFromOptions(const QCommandLineParser& parser);
void saveRecipeIfAsked(const QCommandLineParser& parser, const Recipe& recipe);
// The run eval, analyze and quantize share: model folder, recipe (saved when asked), --device,
// --dtype, --tokenizer and --strict. `requireScheme`: a scheme flag or --recipe must be given.
RunRequest requestFromOptions(const QCommandLineParser& parser, const QString& modelDir,
                              bool requireScheme = true);
// Where a run's results came from (recipe/Provenance.h), for the JSON reports.
nlohmann::json provenanceJson(const QCommandLineParser& parser, const RunRequest& request,
                              const RunOutcome& outcome);
// Every accepted scheme name for help: current names, each with the older Quark names that
// resolve to the same scheme, then the older names that have no current equivalent.
QString schemeHelp();

} // namespace qs::cli
