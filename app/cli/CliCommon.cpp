#include "CliCommon.h"

#include <cstdio>

#include "ProgressLine.h"
#include "engine/Runtime.h"
#include "io/GgufFolder.h"

#include <iostream>

namespace qs::cli {

std::function<bool(double, const std::string&)> progressFor(const QCommandLineParser& parser,
                                                            const std::string& what) {
    return ProgressLine(what, ProgressLine::modeFor(stderr, parser.isSet("quiet"))).callback();
}

void addRunOptions(QCommandLineParser& parser) {
    parser.addOption({{"quiet", "q"}, "No progress output on stderr (warnings still print)."});
    parser.addOption({"strict", "Warnings (a pattern matching no layer, fewer calibration or "
                                "evaluation windows than asked) are errors, raised before the "
                                "run starts."});
    addThreadsOption(parser);
}

void addModelDirOption(QCommandLineParser& parser) {
    parser.addPositionalArgument("MODEL_DIR",
                                 "Hugging Face checkpoint folder (or a llama GGUF file).");
    parser.addOption({{"model-dir", "model_dir"},
                      "The checkpoint folder, as Quark's --model_dir (instead of MODEL_DIR).",
                      "DIR"});
}

QString modelDirFromOptions(const QCommandLineParser& parser) {
    const QStringList pos = parser.positionalArguments();
    if (parser.isSet("model-dir")) {
        if (!pos.isEmpty())
            throw UsageError{"give the model folder once: MODEL_DIR or --model_dir DIR, not both "
                             "(extra argument '" +
                             pos.front().toStdString() + "')"};
        return modelFolder(parser.value("model-dir"));
    }
    return modelFolder(singlePositional(parser, "MODEL_DIR (or --model_dir DIR)"));
}

QString modelFolder(const QString& path) {
    if (!isGgufPath(path.toStdString()))
        return path;
    const std::string folder = resolveModelFolder(path.toStdString());
    std::fprintf(stderr, "quantscope-cli: %s opens as %s (dequantized to fp32)\n", qPrintable(path),
                 folder.c_str());
    return QString::fromStdString(folder);
}

void printWarnings(const std::string& command, const std::vector<std::string>& warnings) {
    for (const std::string& w : warnings)
        std::fprintf(stderr, "quantscope-cli %s: warning: %s\n", command.c_str(), w.c_str());
}

bool parseOrHelp(QCommandLineParser& parser, const QStringList& args, const QString& synopsis,
                 const QString& epilogue) {
    parser.setApplicationDescription(synopsis);
    parser.addHelpOption();
    if (!parser.parse(args))
        throw UsageError{parser.errorText().toStdString()};
    if (parser.isSet("help")) {
        // Qt names the program by argv[0] (a full path); the user typed the subcommand.
        QString text = parser.helpText();
        const qsizetype options = text.indexOf(" [options]");
        if (text.startsWith("Usage: ") && options > 0)
            text.replace(7, options - 7, "quantscope-cli " + args.value(0));
        std::fputs(qPrintable(text + epilogue), stdout);
        return false;
    }
    return true;
}

QString singlePositional(const QCommandLineParser& parser, const char* what) {
    const QStringList pos = parser.positionalArguments();
    if (pos.size() != 1)
        throw UsageError{std::string("expected exactly one ") + what + ", got " +
                         std::to_string(pos.size()) + " positional arguments"};
    return pos.front();
}

int64_t intOption(const QCommandLineParser& parser, const QString& name, int64_t min, int64_t max) {
    bool ok = false;
    const QString text = parser.value(name);
    const qlonglong v = text.toLongLong(&ok);
    if (!ok || v < min || v > max)
        throw UsageError{"--" + name.toStdString() + ": expected an integer in [" +
                         std::to_string(min) + ", " + std::to_string(max) + "], got '" +
                         text.toStdString() + "'"};
    return v;
}

int64_t intOption(const QCommandLineParser& parser, const QString& name, const FieldLimit& limit) {
    bool ok = false;
    const QString text = parser.value(name);
    const qlonglong v = text.toLongLong(&ok);
    if (!ok || !limit.allows(v))
        throw UsageError{"--" + name.toStdString() + ": expected an integer, " +
                         (ok ? limit.refusal(v) : "got '" + text.toStdString() + "'")};
    return v;
}

void printJson(const nlohmann::json& j) {
    std::cout << j.dump(2) << std::endl;
}

void printLine(const std::string& s) {
    std::cout << s << '\n';
}

void addThreadsOption(QCommandLineParser& parser) {
    parser.addOption({"threads", "LibTorch intra-op threads (default: one per core).", "N", "0"});
}

void applyThreadsOption(const QCommandLineParser& parser) {
    configureThreads(int(intOption(parser, "threads", 0, 1024)));
}

} // namespace qs::cli
