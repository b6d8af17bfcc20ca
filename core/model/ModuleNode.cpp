#include "model/ModuleNode.h"

namespace qs {

const ModuleNode* ModuleNode::find(const std::string& fullName) const {
    if (name == fullName)
        return this;
    for (const ModuleNode& c : children)
        if (const ModuleNode* hit = c.find(fullName))
            return hit;
    return nullptr;
}

void ModuleNode::collect(const std::string& leafKind, std::vector<const ModuleNode*>& out) const {
    if (kind == leafKind)
        out.push_back(this);
    for (const ModuleNode& c : children)
        c.collect(leafKind, out);
}

} // namespace qs
