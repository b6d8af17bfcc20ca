// llama.cpp's architectures the GGUF exporter writes and the GGUF reader opens, one row each:
// the architecture name (general.architecture, also the prefix of its metadata keys), the
// metadata keys and the Hugging Face config keys they come from, the tensor names in both
// directions (convert_hf_to_gguf.py's tensor map), whether q/k rows are permuted for llama.cpp's
// RoPE, which tensors stay F32 and what of a mixture of experts the architecture can express.
// The exporter (export/GgufExporter), the size accounting (export/ExportSize) and the reader
// (io/GgufFolder) read only this table: a new architecture is one row plus the family's
// FamilyCapabilities::gguf naming it (model/ModelFamily.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qs {

struct GgufHeader;
class GgufFile;

struct GgufNamePair {
    const char* hf;
    const char* gguf;
};

// One metadata key `<arch>.<key>` from config.json's `hfKey` (a number). When config.json has no
// `hfKey`: the value of `fallbackKey` if set, else `fallback`. hidden_size / num_attention_heads
// when `fallbackKey` is "head_dim()". Read back into `hfKey`.
struct GgufKey {
    const char* key;
    const char* hfKey;
    bool isFloat;            // f32, else u32
    double fallback;         // used when neither hfKey nor fallbackKey is in config.json
    const char* fallbackKey; // nullptr: none
    bool required;           // the reader refuses a file without it
};

struct GgufArchitecture {
    std::string name;        // "llama", "qwen2moe"
    std::string hfModelType; // model_type of the config.json the reader writes
    std::string hfClass;     // its architectures[0]
    // llama.cpp's llama architecture rotates adjacent pairs: the converter permutes the q/k rows
    // of Hugging Face's rotate_half layout (LlamaModel.permute). NEOX-style architectures
    // (qwen2moe) rotate halves as Hugging Face does: rows kept.
    bool ropeRowsPermuted = false;
    std::vector<GgufKey> keys;
    // Block tensors: "model.layers.N.<hf>.weight|bias" <-> "blk.N.<gguf>.weight|bias".
    std::vector<GgufNamePair> blockTensors;
    // Experts stacked into one 3-D tensor: "model.layers.N.<expertModule>.E.<hf>.weight" for
    // E = 0..n-1 <-> "blk.N.<gguf>.weight" of ggml ne [in, out, n] (expert E's [out, in] matrix
    // after expert E-1's).
    std::string expertModule; // "mlp.experts"; empty: no experts
    std::vector<GgufNamePair> expertTensors;
    // Block tensors written F32 whatever the weight type (routers, shared-expert gates: llama.cpp
    // reads them in float; llama-quantize never quantizes them either).
    std::vector<std::string> keptF32;
    // Block tensors Hugging Face holds as [1, n] that older converters wrote 1-D (squeezed): read
    // back as [1, n] either way.
    std::vector<std::string> rowVectors;
    // The mixture of experts it computes (checked against the config before an export):
    bool moeEveryLayer = false;  // every block is a MoE block (no dense MLP layers)
    bool sharedExpert = false;   // with a shared expert gated by sigmoid(x . w)
    bool normalisesTopK = false; // the chosen experts' softmax weights renormalised to sum 1
    std::string biasKey;         // config key saying q/k/v have biases ("attention_bias")
    nlohmann::json fixedConfig;  // further config.json fields the reader writes as they are
};

const std::vector<GgufArchitecture>& ggufArchitectures();
// nullptr when no row has this name.
const GgufArchitecture* findGgufArchitecture(const std::string& name);
const GgufArchitecture& ggufLlamaArchitecture();

// A Hugging Face tensor's GGUF name; `expert` is the index of an expert stacked into it (-1:
// not stacked). An empty name when the architecture has no place for the tensor.
struct GgufTensorName {
    std::string name;
    int expert = -1;
};
GgufTensorName ggufNameOf(const GgufArchitecture& arch, const std::string& hfName);
// The inverse: one Hugging Face name, or for a stacked tensor expert `expert`'s (expert must
// then be >= 0); empty when the name is not the architecture's.
std::string hfNameOf(const GgufArchitecture& arch, const std::string& ggufName, int expert = -1);
// Whether `ggufName` is a stacked experts tensor of the architecture.
bool ggufIsStacked(const GgufArchitecture& arch, const std::string& ggufName);
// Whether a block tensor is written F32 whatever the weight type (keptF32).
bool ggufKeptF32(const GgufArchitecture& arch, const std::string& ggufName);
// Whether a block tensor is one of the architecture's rowVectors.
bool ggufIsRowVector(const GgufArchitecture& arch, const std::string& ggufName);
// The config.json key the architecture's metadata key `key` ("expert_count") comes from; empty
// when the row has no such key.
std::string ggufHfKeyOf(const GgufArchitecture& arch, const std::string& key);

// A number of config.json, looked up at the top level and then in `rope_parameters`
// (transformers 5 moved rope_theta there); nullptr-like when absent.
const nlohmann::json* configNumber(const nlohmann::json& cfg, const std::string& key);
// The value the architecture's key `k` takes for `cfg` (GgufKey's fallbacks applied).
double ggufKeyValue(const GgufKey& k, const nlohmann::json& cfg);

// config.json of the Hugging Face model the GGUF file holds, for its architecture row. qs::Error
// names the file, key and reason for a missing or implausible value.
nlohmann::json ggufHfConfig(const GgufArchitecture& arch, const GgufHeader& h, const GgufFile& file,
                            const std::string& source);

} // namespace qs
