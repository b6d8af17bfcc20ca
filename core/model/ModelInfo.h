#pragma once

#include "model/ModuleNode.h"

#include <string>
#include <utility>
#include <vector>

namespace qs {

// What `inspect` shows and what the GUI's layer tree starts from: everything about a checkpoint
// that can be learned from config.json and safetensors headers, without reading any weight.
struct ModelInfo {
    std::string directory;    // the checkpoint folder the model computes with
    std::string sourceFile;   // the GGUF file `directory` was converted from; empty for a folder
    std::string family;       // registry family, e.g. "llama", "opt"
    std::string architecture; // config.json "architectures"[0]
    std::vector<std::pair<std::string, std::string>> configSummary; // ordered key → value text
    std::vector<std::string> checkpointFiles;
    uint64_t checkpointBytes = 0;
    int64_t totalParameters = 0;
    std::string tokenizerFiles; // e.g. "tokenizer.model + tokenizer.json"
    ModuleNode tree;
};

// Reads config.json and the safetensors headers of `directory`. Throws qs::Error naming the file,
// field and reason on any problem.
ModelInfo inspectModel(const std::string& directory);

} // namespace qs
