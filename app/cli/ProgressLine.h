// The CLI's progress report for long runs: phase, block, percentage, rate and ETA.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

namespace qs::cli {

// One progress line: "eval  42%  1.9%/s  ETA 31s  block 3: evaluating". The rate and the ETA
// (at the average rate so far) appear once 2% is done, so the first block's start-up does not
// promise a wild ETA.
std::string formatProgressLine(const std::string& what, double fraction, const std::string& message,
                               double elapsedSeconds);

class ProgressLine {
public:
    // Terminal: one line redrawn in place (at most 5 updates a second). Lines: a plain line each
    // time another tenth is done and at the end (logs, pipes, CI). Off: --quiet.
    enum class Mode { Terminal, Lines, Off };

    // Terminal when `stream` is a terminal, Lines otherwise; Off when `quiet`.
    static Mode modeFor(FILE* stream, bool quiet);

    ProgressLine(std::string what, Mode mode, FILE* stream = stderr);
    // The callback the engine takes; never cancels. Empty when Off.
    std::function<bool(double, const std::string&)> callback();
    void update(double fraction, const std::string& message);

private:
    std::string m_what;
    Mode m_mode;
    FILE* m_stream;
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point m_lastDraw;
    int m_lastTenth = -1;
    bool m_finished = false;
};

} // namespace qs::cli
