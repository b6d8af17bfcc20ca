#include "export/TensorBlocks.h"

#include <climits>
#include <regex>

namespace qs {

int blockOfTensorName(const std::string& name) {
    static const std::regex re(R"(\.layers\.(\d+)\.)");
    std::smatch m;
    if (std::regex_search(name, m, re))
        return std::stoi(m[1].str());
    return name.find("embed") != std::string::npos ? -1 : INT_MAX;
}

} // namespace qs
