#pragma once

#include "recipe/RecipeLimits.h"
#include "util/Error.h"

#include <QCommandLineParser>
#include <QStringList>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qs::cli {

// Exit codes: 0 success, 1 the work failed (bad input file, failed run), 2 bad command line.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Thrown for command-line mistakes; main prints the message with the subcommand's usage hint.
struct UsageError {
    std::string message;
};

// Runs `f`; a qs::Error it throws for a flag value the recipe code refuses (unknown scheme,
// mode, dtype, a Quark dataset name) becomes a UsageError: a command-line mistake, exit 2.
template <typename F> auto asUsageError(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error& e) {
        throw UsageError{e.what()};
    }
}

// Parses `args` (subcommand first) with `parser`; handles --help. Returns false when the caller
// should exit with 0 (help printed). The usage line names the subcommand; `epilogue` follows
// the options (the scheme list).
bool parseOrHelp(QCommandLineParser& parser, const QStringList& args, const QString& synopsis,
                 const QString& epilogue = {});
// Exactly one positional argument (the model folder) or a UsageError.
QString singlePositional(const QCommandLineParser& parser, const char* what);
int64_t intOption(const QCommandLineParser& parser, const QString& name, int64_t min, int64_t max);
// A recipe field's flag: the range (and special value) of recipe/RecipeLimits.h.
int64_t intOption(const QCommandLineParser& parser, const QString& name, const FieldLimit& limit);
void printJson(const nlohmann::json& j);
void printLine(const std::string& s);
// Common options: --threads N (LibTorch intra-op threads, default = cores).
void addThreadsOption(QCommandLineParser& parser);
void applyThreadsOption(const QCommandLineParser& parser);

// The model folder: the single positional argument or Quark's --model_dir (not both); a GGUF
// file stands for its converted folder (modelFolder).
void addModelDirOption(QCommandLineParser& parser);
QString modelDirFromOptions(const QCommandLineParser& parser);
// `path` itself, or for a .gguf file the checkpoint folder it converts to (io/GgufFolder.h;
// converted on first use, with a note on stderr).
QString modelFolder(const QString& path);
// --quiet (no progress) and --strict (warnings are errors) for the long-running commands.
void addRunOptions(QCommandLineParser& parser);
// The progress callback for a long run (ProgressLine): redrawn in place on a terminal, plain
// lines otherwise, nothing under --quiet.
std::function<bool(double, const std::string&)> progressFor(const QCommandLineParser& parser,
                                                            const std::string& what);

// "quantscope-cli <command>: warning: <text>" on stderr for each warning of a run.
void printWarnings(const std::string& command, const std::vector<std::string>& warnings);

int runInspect(const QStringList& args);
int runEval(const QStringList& args);
int runGenerate(const QStringList& args);
int runSynth(const QStringList& args);
int runTokenize(const QStringList& args);
int runAnalyze(const QStringList& args);
int runQuantize(const QStringList& args);
int runRecipe(const QStringList& args);
int runRecipeSearch(const QStringList& args); // recipe --auto

} // namespace qs::cli
