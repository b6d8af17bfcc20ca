#include "util/Error.h"

namespace qs {

static std::string compose(const std::string& source, const std::string& field,
                           const std::string& reason) {
    std::string msg = source;
    if (!field.empty())
        msg += (msg.empty() ? "" : ": ") + std::string("field '") + field + "'";
    if (!reason.empty())
        msg += (msg.empty() ? "" : ": ") + reason;
    return msg;
}

Error::Error(std::string source, std::string field, std::string reason)
    : std::runtime_error(compose(source, field, reason)), m_source(std::move(source)),
      m_field(std::move(field)), m_reason(std::move(reason)) {}

Error::Error(std::string message) : std::runtime_error(message), m_reason(std::move(message)) {}

} // namespace qs
