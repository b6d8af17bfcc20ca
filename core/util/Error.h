#pragma once

#include <stdexcept>
#include <string>

namespace qs {

// The one exception type core throws for bad input. Its message always names the file (or
// other source), the offending field when there is one, and the reason, so the CLI can print it
// as is and the GUI can show it in a dialog.
class Error : public std::runtime_error {
public:
    Error(std::string source, std::string field, std::string reason);
    explicit Error(std::string message);

    const std::string& source() const { return m_source; }
    const std::string& field() const { return m_field; }
    const std::string& reason() const { return m_reason; }

private:
    std::string m_source;
    std::string m_field;
    std::string m_reason;
};

// Thrown when a progress callback asks a job to stop.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace qs
