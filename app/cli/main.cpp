// quantscope-cli: the headless front end. Each subcommand lives in its own file; this only
// dispatches and turns errors into messages and exit codes.
#include "CliCommon.h"
#include "RankLauncher.h"

#include "dist/LaunchEnvironment.h"

#include "engine/Runtime.h"
#include "util/Error.h"

#include "util/ErrorText.h"

#include <QCoreApplication>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

namespace {

const char* kUsage =
    "Usage: quantscope-cli <command> [options]\n"
    "\n"
    "Commands:\n"
    "  inspect MODEL_DIR [--json]              architecture, config and module tree (headers "
    "only)\n"
    "  eval MODEL_DIR --data TEXT [...]        perplexity (fp, or fake-quantized with scheme "
    "flags)\n"
    "  analyze MODEL_DIR --quant-scheme S ...  per-layer quantization error report (--json)\n"
    "  quantize MODEL_DIR --quant-scheme S --out DIR  fake-quantized checkpoint + recipe\n"
    "  generate MODEL_DIR --prompt TEXT [...]  greedy continuation\n"
    "  recipe --from-quark CONFIG | --to-quark RECIPE | --check RECIPE  recipe conversion\n"
    "  synth --arch FAMILY --out DIR [...]     write a synthetic Hugging Face checkpoint\n"
    "  tokenize MODEL_DIR --data TEXT|--text S token ids as eval sees them\n"
    "\n"
    "MODEL_DIR may also be a llama GGUF file: it is dequantized to fp32 once into a cached\n"
    "checkpoint folder, which the command then opens.\n"
    "Run 'quantscope-cli <command> --help' for a command's options.\n"
    "Global: --help, --version.\n"
    "\n"
    "Distributed (eval, quantize, analyze): '--nproc N' runs N ranks on this machine; under\n"
    "torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or srun (SLURM_PROCID, SLURM_NTASKS)\n"
    "each process joins the group (Gloo on the CPU; NCCL with --device cuda, GPU LOCAL_RANK).\n"
    "Evaluation and calibration windows are split by batch, analyze --sensitivity's rows by\n"
    "rank; every world size gives the same figures, reports (per-layer analysis, fidelity,\n"
    "sensitivity) and files; rank 0 prints and writes them.\n";

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName("quantscope-cli");
    QCoreApplication::setApplicationVersion(QS_VERSION);
    QStringList args = QCoreApplication::arguments();
    if (args.size() < 2 || args[1] == "--help" || args[1] == "-h" || args[1] == "help") {
        std::fputs(kUsage, args.size() < 2 ? stderr : stdout);
        return args.size() < 2 ? qs::cli::kExitUsage : 0;
    }
    if (args[1] == "--version" || args[1] == "-v") {
        qs::configureThreads(0);
        std::printf("quantscope-cli %s (%s)\n", QS_VERSION, qs::runtimeSummary().c_str());
        return 0;
    }
    const std::map<QString, int (*)(const QStringList&)> commands{
        {"inspect", qs::cli::runInspect},   {"eval", qs::cli::runEval},
        {"generate", qs::cli::runGenerate}, {"synth", qs::cli::runSynth},
        {"tokenize", qs::cli::runTokenize}, {"analyze", qs::cli::runAnalyze},
        {"quantize", qs::cli::runQuantize}, {"recipe", qs::cli::runRecipe},
    };
    const QString name = args[1];
    auto it = commands.find(name);
    if (it == commands.end()) {
        std::fprintf(stderr, "quantscope-cli: unknown command '%s'\n\n%s", qPrintable(name),
                     kUsage);
        return qs::cli::kExitUsage;
    }
    args.removeAt(0); // QCommandLineParser expects the program name first: use the command's
    try {
        if (const std::optional<int> launched = qs::cli::launchRanksIfAsked(args))
            return *launched;
        if (qs::LaunchEnvironment::fromEnvironment().distributed())
            qs::cli::refuseUnsplitCommandUnderLauncher(name);
        const int code = it->second(args);
        // A report cut short by a full disk or a closed pipe is a failure, not a success.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
            std::fprintf(stderr, "quantscope-cli %s: error: writing the output failed: %s\n",
                         qPrintable(name), std::strerror(errno));
            return qs::cli::kExitFailure;
        }
        return code;
    } catch (const qs::cli::UsageError& e) {
        std::fprintf(stderr, "quantscope-cli %s: %s\n(see 'quantscope-cli %s --help')\n",
                     qPrintable(name), e.message.c_str(), qPrintable(name));
        return qs::cli::kExitUsage;
    } catch (const qs::Cancelled&) {
        std::fprintf(stderr, "quantscope-cli %s: cancelled\n", qPrintable(name));
        return qs::cli::kExitFailure;
    } catch (const std::exception& e) {
        // Engine errors name recipe fields; on the command line the flag that sets one helps.
        static const std::map<std::string, std::string> flags{
            {"calibration.data", "--calib-data FILE"},
            {"evaluation.data", "--data FILE"},
            {"evaluation.seq_len", "--eval-seq-len N"}};
        const auto* error = dynamic_cast<const qs::Error*>(&e);
        const auto flag = error ? flags.find(error->field()) : flags.end();
        std::fprintf(stderr, "quantscope-cli %s: error: %s%s\n", qPrintable(name),
                     qs::errorText(e).c_str(),
                     flag != flags.end() ? (" (" + flag->second + ")").c_str() : "");
        return qs::cli::kExitFailure;
    }
}
