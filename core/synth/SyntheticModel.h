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
    // "llama", "opt", or a newer family: "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe",
    // "mixtral",
    // "gemma2", "gemma3_text", "phi3", and the parallel "phi", "gptj", "cohere"
    // (syntheticArchitectures()).
    std::string arch = "llama";
    std::string outDir;
    int64_t hiddenSize = 256;
    int64_t intermediateSize = 688;
    int64_t numLayers = 4;
    int64_t numHeads = 8;
    int64_t numKvHeads = 4;
    int64_t headDim = 0; // 0: hidden / heads (Qwen3 and Gemma set their own)
    // Mixture of experts (mixtral, qwen3_moe): experts per layer, chosen per token, and each
    // expert's intermediate size (mixtral: intermediateSize).
    int64_t numExperts = 8;
    int64_t expertsPerToken = 2;
    int64_t expertIntermediateSize = 0; // 0: intermediateSize
    // qwen2_moe: the shared expert's intermediate size (0: intermediateSize)
    int64_t sharedExpertIntermediateSize = 0;
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

// The --arch values writeSyntheticModel accepts.
const std::vector<std::string>& syntheticArchitectures();

// Writes the checkpoint (config.json, safetensors, tokenizer.json, tokenizer_config.json,
// generation_config.json). `progress(done, total)` returning false cancels. Throws qs::Error.
void writeSyntheticModel(const SyntheticModelOptions& options,
                         const std::function<bool(int64_t, int64_t)>& progress = {});

} // namespace qs
