#pragma once

#include "model/ModuleNode.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// The quantization a checkpoint carries on disk. `format` says what wrote it ("AMD Quark
// hf_format, real quantized (pack reorder)", "GGUF v3"); `layers` maps the full name of each
// linear (and the LM head) to its stored scheme ("uint4 g32", "Q4_0"), or kStoredFloat where the
// file keeps that weight in float. Both empty for a float checkpoint.
struct StoredSchemes {
    static constexpr const char* kStoredFloat = "float";
    std::string format;
    std::map<std::string, std::string> layers;
    bool empty() const { return format.empty(); }
};

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
    // What a checkpoint that stores quantized weights stores: a real-quantized Quark export or
    // a GGUF file. Its weights are dequantized on load; these say what they were on disk.
    StoredSchemes stored;
};

// Reads config.json and the safetensors headers of `directory`. `sourceFile`, when given, is the
// GGUF file `directory` was converted from (io/GgufFolder.h): its tensor types become `stored`.
// Throws qs::Error naming the file, field and reason on any problem.
ModelInfo inspectModel(const std::string& directory, const std::string& sourceFile = {});

} // namespace qs
