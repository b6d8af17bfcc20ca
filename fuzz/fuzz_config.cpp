// libFuzzer target: the input is the text of a config.json. The parser must return a config or
// throw qs::Error; any other exception, crash or sanitizer report is a finding.
#include "model/ConfigParser.h"
#include "util/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        qs::parseModelConfig(std::string(reinterpret_cast<const char*>(data), size),
                             "fuzz/config.json");
    } catch (const qs::Error&) {
        // Refused with a message: fine.
    }
    return 0;
}
