#include "CliCommon.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "engine/Runtime.h"

#include <cstdio>
#include <iostream>

namespace qs::cli {

std::function<bool(double, const std::string&)> terminalProgress(const std::string& what) {
    if (!isatty(STDERR_FILENO))
        return {};
    struct State {
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last;
        bool finished = false;
    };
    auto state = std::make_shared<State>();
    return [what, state](double fraction, const std::string& message) {
        const auto now = std::chrono::steady_clock::now();
        if (state->finished ||
            (fraction < 1.0 && now - state->last < std::chrono::milliseconds(200)))
            return true;
        state->finished = fraction >= 1.0;
        state->last = now;
        const double elapsed = std::chrono::duration<double>(now - state->start).count();
        // The remaining time at the average rate so far, once there is a rate to speak of.
        std::string eta;
        if (fraction >= 0.02 && fraction < 1.0) {
            const auto left = static_cast<long long>(elapsed * (1.0 - fraction) / fraction + 0.5);
            eta = left >= 60
                      ? "  ETA " + std::to_string(left / 60) + "m" + std::to_string(left % 60) + "s"
                      : "  ETA " + std::to_string(left) + "s";
        }
        std::fprintf(stderr, "\r\033[K%s %3d%%%s  %s", what.c_str(), int(fraction * 100.0),
                     eta.c_str(), message.substr(0, 60).c_str());
        if (fraction >= 1.0)
            std::fputc('\n', stderr);
        std::fflush(stderr);
        return true;
    };
}

void printWarnings(const std::string& command, const std::vector<std::string>& warnings) {
    for (const std::string& w : warnings)
        std::fprintf(stderr, "quantscope-cli %s: warning: %s\n", command.c_str(), w.c_str());
}

bool parseOrHelp(QCommandLineParser& parser, const QStringList& args, const QString& synopsis) {
    parser.setApplicationDescription(synopsis);
    parser.addHelpOption();
    if (!parser.parse(args))
        throw UsageError{parser.errorText().toStdString()};
    if (parser.isSet("help")) {
        std::fputs(qPrintable(parser.helpText()), stdout);
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
