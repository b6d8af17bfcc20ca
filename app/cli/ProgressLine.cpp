#include "ProgressLine.h"

#include <unistd.h>

#include <memory>

namespace qs::cli {

namespace {

std::string duration(double seconds) {
    const auto s = static_cast<long long>(seconds + 0.5);
    if (s >= 3600)
        return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
    if (s >= 60)
        return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
    return std::to_string(s) + "s";
}

} // namespace

std::string formatProgressLine(const std::string& what, double fraction, const std::string& message,
                               double elapsedSeconds) {
    char head[64];
    std::snprintf(head, sizeof head, "%s %3d%%", what.c_str(), int(fraction * 100.0));
    std::string line = head;
    if (fraction >= 0.02 && elapsedSeconds > 0.0) {
        // Percent per second, or per minute for runs slower than 0.1%/s (large models). Not
        // before a second has passed: over a tenth of a second it reads "963.3%/s".
        const double perSecond = 100.0 * fraction / elapsedSeconds;
        char rate[32];
        if (perSecond >= 0.1)
            std::snprintf(rate, sizeof rate, "  %.1f%%/s", perSecond);
        else
            std::snprintf(rate, sizeof rate, "  %.1f%%/min", perSecond * 60.0);
        if (elapsedSeconds >= 1.0)
            line += rate;
        if (fraction < 1.0)
            line += "  ETA " + duration(elapsedSeconds * (1.0 - fraction) / fraction);
        else
            line += "  in " + duration(elapsedSeconds);
    }
    if (!message.empty())
        line += "  " + message.substr(0, 60);
    return line;
}

ProgressLine::Mode ProgressLine::modeFor(FILE* stream, bool quiet) {
    if (quiet)
        return Mode::Off;
    return isatty(fileno(stream)) ? Mode::Terminal : Mode::Lines;
}

ProgressLine::ProgressLine(std::string what, Mode mode, FILE* stream)
    : m_what(std::move(what)), m_mode(mode), m_stream(stream) {}

std::function<bool(double, const std::string&)> ProgressLine::callback() {
    if (m_mode == Mode::Off)
        return {};
    auto self = std::make_shared<ProgressLine>(*this);
    return [self](double fraction, const std::string& message) {
        self->update(fraction, message);
        return true;
    };
}

void ProgressLine::update(double fraction, const std::string& message) {
    if (m_mode == Mode::Off || m_finished)
        return;
    const auto now = std::chrono::steady_clock::now();
    const bool last = fraction >= 1.0;
    if (m_mode == Mode::Terminal) {
        if (!last && now - m_lastDraw < std::chrono::milliseconds(200))
            return;
    } else {
        const int tenth = int(fraction * 10.0);
        if (!last && tenth <= m_lastTenth)
            return;
        m_lastTenth = tenth;
    }
    m_lastDraw = now;
    m_finished = last;
    const std::string line = formatProgressLine(
        m_what, fraction, message, std::chrono::duration<double>(now - m_start).count());
    if (m_mode == Mode::Terminal)
        std::fprintf(m_stream, "\r\033[K%s%s", line.c_str(), last ? "\n" : "");
    else
        std::fprintf(m_stream, "%s\n", line.c_str());
    std::fflush(m_stream);
}

} // namespace qs::cli
