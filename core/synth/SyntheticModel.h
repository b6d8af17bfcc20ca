#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qs {

// A deterministic random Hugging Face checkpoint with realistic statistics: Gaussian weights with
// per-layer scales, norms near one, a few planted activation-outlier channels (large RMSNorm gains
// on fixed hidden channels, as real LLMs show) and a small byte-level tokenizer. Used by tests,
// benchmarks at any scale and as the GUI's built-in demo model.
struct SyntheticModelOptions {
    std::string arch = "llama"; // "llama" or "opt"
    std::string outDir;
    int64_t hiddenSize = 256;
    int64_t intermediateSize = 688;
    int64_t numLayers = 4;
    int64_t numHeads = 8;
    int64_t numKvHeads = 4;
    int64_t vocabSize = 512;
    int64_t maxPositions = 1024;
    bool tieWordEmbeddings = false;
    std::string dtype = "F32"; // "F32", "BF16" or "F16"
    uint64_t seed = 0;
    bool sparse = false;    // write headers and leave weights as zero holes (benchmarks)
    int64_t shardBytes = 0; // > 0: split into shards of about this size with an index
    std::vector<int64_t> outlierChannels{3, 17}; // hidden channels with planted outliers
    double outlierGain = 40.0;
};

// Writes the checkpoint (config.json, safetensors, tokenizer.json, tokenizer_config.json,
// generation_config.json). `progress(done, total)` returning false cancels. Throws qs::Error.
void writeSyntheticModel(const SyntheticModelOptions& options,
                         const std::function<bool(int64_t, int64_t)>& progress = {});

} // namespace qs
