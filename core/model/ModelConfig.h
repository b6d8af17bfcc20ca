#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace qs {

struct RopeScaling {
    std::string type; // "llama3", "linear", "dynamic" (dynamic is refused: it depends on length)
    double factor = 1.0;
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    int64_t originalMaxPositions = 8192;
};

// The typed subset of config.json the model families use. Parsed strictly by the family that
// owns the model_type; `raw` keeps the whole file for export.
struct ModelConfig {
    std::string source; // path of the config.json, for error messages
    std::string modelType;
    std::string architecture;
    int64_t hiddenSize = 0;
    int64_t intermediateSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t numKvHeads = 0;
    int64_t headDim = 0;
    int64_t vocabSize = 0;
    int64_t maxPositions = 0;
    double normEps = 1e-5;
    double ropeTheta = 10000.0;
    std::optional<RopeScaling> ropeScaling;
    std::string hiddenAct = "silu";
    bool attentionBias = false; // bias on q/k/v (Qwen2: true)
    bool outputBias = false;    // bias on o_proj / out_proj
    bool mlpBias = false;
    bool tieWordEmbeddings = false;
    int64_t slidingWindow = 0; // 0 = full attention
    int64_t bosTokenId = -1;
    int64_t eosTokenId = -1;
    std::string torchDtype = "float32";
    // OPT
    bool doLayerNormBefore = true;
    int64_t wordEmbedProjDim = 0;
    int64_t positionOffset = 0; // OPT's learned positions start at index 2
    int64_t ffnDim = 0;         // OPT fc1 width (intermediateSize mirrors it)
    bool enableBias = true;     // OPT linears and layer norms carry biases
    nlohmann::json raw;
};

} // namespace qs
