#include "recipe/ExpertName.h"

#include <regex>

namespace qs {

ExpertName splitExpertName(const std::string& name) {
    // the last ".experts" (DBRX: ".experts.mlp") followed by an index
    static const std::regex re(R"(^(.*\.experts(?:\.mlp)?)\.(\d+)\.(.+)$)");
    std::smatch m;
    if (!std::regex_match(name, m, re))
        return {};
    return {m[1].str(), m[2].str(), m[3].str()};
}

} // namespace qs
