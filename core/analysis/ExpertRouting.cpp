#include "analysis/ExpertRouting.h"

#include "recipe/ExpertName.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace qs {

std::vector<ExpertTokens> expertRouting(const std::vector<LayerReport>& layers, double rareShare) {
    std::vector<ExpertTokens> out;
    std::map<std::string, size_t> index;               // expert module → entry in out
    std::map<std::string, std::vector<size_t>> groups; // experts module → its experts
    for (const LayerReport& l : layers) {
        const ExpertName x = splitExpertName(l.name);
        const std::string& group = x.experts;
        const std::string& id = x.index;
        if (group.empty())
            continue;
        const std::string expert = group + "." + id;
        auto it = index.find(expert);
        if (it == index.end()) {
            it = index.emplace(expert, out.size()).first;
            out.push_back({expert, l.block, 0, 0.0, false});
            groups[group].push_back(it->second);
        }
        // gate, up and down see the same tokens; the maximum tolerates one left unanalysed
        out[it->second].tokens = std::max(out[it->second].tokens, l.input.tokens);
    }
    for (const auto& [group, members] : groups) {
        int64_t total = 0;
        for (size_t i : members)
            total += out[i].tokens;
        const double even = double(total) / double(members.size());
        for (size_t i : members) {
            out[i].shareOfEven = even > 0 ? double(out[i].tokens) / even : 0.0;
            out[i].rare = out[i].shareOfEven < rareShare;
        }
    }
    return out;
}

} // namespace qs
