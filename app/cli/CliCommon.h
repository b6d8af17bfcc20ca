#pragma once

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

// Parses `args` (subcommand first) with `parser`; handles --help. Returns false when the caller
// should exit with 0 (help printed).
bool parseOrHelp(QCommandLineParser& parser, const QStringList& args, const QString& synopsis);
// Exactly one positional argument (the model folder) or a UsageError.
QString singlePositional(const QCommandLineParser& parser, const char* what);
int64_t intOption(const QCommandLineParser& parser, const QString& name, int64_t min, int64_t max);
void printJson(const nlohmann::json& j);
void printLine(const std::string& s);
// Common options: --threads N (LibTorch intra-op threads, default = cores).
void addThreadsOption(QCommandLineParser& parser);
void applyThreadsOption(const QCommandLineParser& parser);

// A progress callback for long runs: on a terminal, one self-overwriting line on stderr
// ("eval  42%  ETA 12s  block 3: evaluating"), at most a few updates a second; elsewhere silent, so
// piped output stays clean. Never cancels.
std::function<bool(double, const std::string&)> terminalProgress(const std::string& what);

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

} // namespace qs::cli
