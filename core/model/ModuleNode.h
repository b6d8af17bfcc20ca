#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qs {

// One node of a model's module tree, built from config.json and safetensors headers alone (no
// weights read). A plain value type: views show it without ever seeing Torch.
struct ModuleNode {
    std::string name; // full dotted name, e.g. "model.layers.3.self_attn.q_proj"
    std::string kind; // "model", "embedding", "block", "attention", "mlp", "linear", "norm", "head"
    std::vector<int64_t> shape; // weight shape for leaves ([out, in] for linears), empty otherwise
    std::string dtype;          // safetensors dtype name of the weight for leaves
    int64_t parameters = 0;     // parameters of this node and all its children
    int blockIndex = -1;        // decoder block the node belongs to, -1 outside blocks
    std::vector<ModuleNode> children;

    // Depth-first search by full name; nullptr when absent.
    const ModuleNode* find(const std::string& fullName) const;
    // All leaves of the given kind in depth-first order.
    void collect(const std::string& leafKind, std::vector<const ModuleNode*>& out) const;
};

} // namespace qs
