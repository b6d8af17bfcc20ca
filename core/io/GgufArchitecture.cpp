#include "io/GgufArchitecture.h"

#include "io/GgufFile.h"
#include "util/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>

namespace qs {

namespace {

using nlohmann::json;

// Tensors of the whole model, named in full (every architecture here).
const GgufNamePair kModelTensors[] = {{"model.embed_tokens.weight", "token_embd.weight"},
                                      {"model.norm.weight", "output_norm.weight"},
                                      {"lm_head.weight", "output.weight"}};

// The keys every architecture here writes, in the order the llama rows were always written.
std::vector<GgufKey> commonKeys() {
    return {
        {"context_length", "max_position_embeddings", false, 2048, nullptr, false},
        {"embedding_length", "hidden_size", false, 0, nullptr, true},
        {"feed_forward_length", "intermediate_size", false, 0, nullptr, true},
        {"attention.head_count", "num_attention_heads", false, 0, nullptr, true},
        {"attention.head_count_kv", "num_key_value_heads", false, 0, "num_attention_heads", false},
        {"block_count", "num_hidden_layers", false, 0, nullptr, true},
        {"rope.dimension_count", "head_dim", false, 0, "head_dim()", false},
        {"attention.layer_norm_rms_epsilon", "rms_norm_eps", true, 1e-5, nullptr, true},
        {"rope.freq_base", "rope_theta", true, 10000.0, nullptr, false}};
}

std::vector<GgufArchitecture> makeArchitectures() {
    std::vector<GgufArchitecture> rows;

    GgufArchitecture llama;
    llama.name = "llama";
    llama.hfModelType = "llama";
    llama.hfClass = "LlamaForCausalLM";
    llama.ropeRowsPermuted = true;
    llama.keys = commonKeys();
    llama.blockTensors = {
        {"self_attn.q_proj", "attn_q"},          {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},          {"self_attn.o_proj", "attn_output"},
        {"mlp.gate_proj", "ffn_gate"},           {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},           {"input_layernorm", "attn_norm"},
        {"post_attention_layernorm", "ffn_norm"}};
    llama.biasKey = "attention_bias";
    llama.fixedConfig = {{"hidden_act", "silu"}, {"mlp_bias", false}};
    rows.push_back(llama);

    // Qwen1.5-MoE (convert_hf_to_gguf.py Qwen2MoeModel; llama.cpp src/models/qwen2moe.cpp):
    // every block attention + a MoE of softmax routing, top-k weights not renormalised
    // (build_moe_ffn with norm_w false), plus a shared expert scaled by sigmoid(x . w).
    GgufArchitecture qwen2moe;
    qwen2moe.name = "qwen2moe";
    qwen2moe.hfModelType = "qwen2_moe";
    qwen2moe.hfClass = "Qwen2MoeForCausalLM";
    qwen2moe.ropeRowsPermuted = false;
    qwen2moe.keys = commonKeys();
    qwen2moe.keys.insert(
        qwen2moe.keys.end(),
        {{"expert_count", "num_experts", false, 0, nullptr, true},
         {"expert_used_count", "num_experts_per_tok", false, 0, nullptr, true},
         {"expert_feed_forward_length", "moe_intermediate_size", false, 0, nullptr, true},
         {"expert_shared_feed_forward_length", "shared_expert_intermediate_size", false, 0, nullptr,
          true}});
    qwen2moe.blockTensors = {{"self_attn.q_proj", "attn_q"},
                             {"self_attn.k_proj", "attn_k"},
                             {"self_attn.v_proj", "attn_v"},
                             {"self_attn.o_proj", "attn_output"},
                             {"input_layernorm", "attn_norm"},
                             {"post_attention_layernorm", "ffn_norm"},
                             {"mlp.gate", "ffn_gate_inp"},
                             {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"},
                             {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
                             {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
                             {"mlp.shared_expert.down_proj", "ffn_down_shexp"}};
    qwen2moe.expertModule = "mlp.experts";
    qwen2moe.expertTensors = {
        {"gate_proj", "ffn_gate_exps"}, {"up_proj", "ffn_up_exps"}, {"down_proj", "ffn_down_exps"}};
    qwen2moe.keptF32 = {"ffn_gate_inp", "ffn_gate_inp_shexp"};
    qwen2moe.rowVectors = {"ffn_gate_inp_shexp"};
    qwen2moe.moeEveryLayer = true;
    qwen2moe.sharedExpert = true;
    qwen2moe.normalisesTopK = false;
    qwen2moe.biasKey = "qkv_bias";
    qwen2moe.fixedConfig = {{"hidden_act", "silu"},
                            {"norm_topk_prob", false},
                            {"decoder_sparse_step", 1},
                            {"mlp_only_layers", json::array()},
                            {"use_sliding_window", false}};
    rows.push_back(qwen2moe);
    return rows;
}

const GgufValue& required(const GgufHeader& h, const std::string& key, const std::string& source) {
    const GgufValue* v = h.find(key);
    if (!v)
        throw Error(source, key, "missing required metadata key");
    return *v;
}

int64_t requiredCount(const GgufHeader& h, const std::string& key, const std::string& source) {
    const uint64_t v = required(h, key, source).toUnsigned(source, key);
    if (v == 0 || v > (uint64_t(1) << 31))
        throw Error(source, key, "value " + std::to_string(v) + " is not a plausible size");
    return int64_t(v);
}

// A float32 metadata value as the shortest decimal that reads back as the same float (1e-05,
// not 9.999999747378752e-06): the value the Hugging Face config the converter read had.
double metadataNumber(const GgufValue& v, const std::string& source, const std::string& key) {
    const double d = v.toNumber(source, key);
    if (v.type != GgufValueType::F32)
        return d;
    char text[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, d);
        if (float(std::strtod(text, nullptr)) == float(d))
            return std::strtod(text, nullptr);
    }
    return d;
}

} // namespace

const std::vector<GgufArchitecture>& ggufArchitectures() {
    static const std::vector<GgufArchitecture> rows = makeArchitectures();
    return rows;
}

const GgufArchitecture* findGgufArchitecture(const std::string& name) {
    for (const GgufArchitecture& a : ggufArchitectures())
        if (a.name == name)
            return &a;
    return nullptr;
}

const GgufArchitecture& ggufLlamaArchitecture() {
    return ggufArchitectures().front();
}

GgufTensorName ggufNameOf(const GgufArchitecture& arch, const std::string& n) {
    for (const GgufNamePair& p : kModelTensors)
        if (n == p.hf)
            return {p.gguf, -1};
    static const std::regex re(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
    std::smatch m;
    if (!std::regex_match(n, m, re))
        return {};
    const std::string inner = m[2].str();
    for (const GgufNamePair& p : arch.blockTensors)
        if (inner == p.hf)
            return {"blk." + m[1].str() + "." + p.gguf + "." + m[3].str(), -1};
    if (!arch.expertModule.empty() && m[3].str() == "weight") {
        static const std::regex expert(R"((.+)\.(\d{1,6})\.([a-z_]+))");
        std::smatch e;
        if (std::regex_match(inner, e, expert) && e[1].str() == arch.expertModule)
            for (const GgufNamePair& p : arch.expertTensors)
                if (e[3].str() == p.hf)
                    return {"blk." + m[1].str() + "." + p.gguf + ".weight", std::stoi(e[2].str())};
    }
    return {};
}

std::string hfNameOf(const GgufArchitecture& arch, const std::string& n, int expert) {
    for (const GgufNamePair& p : kModelTensors)
        if (n == p.gguf)
            return expert < 0 ? p.hf : std::string();
    // At most six digits: a block index a real file can have, and no overflow downstream.
    static const std::regex re(R"(blk\.(\d{1,6})\.([a-z_]+)\.(weight|bias))");
    std::smatch m;
    if (!std::regex_match(n, m, re))
        return {};
    if (expert < 0) {
        for (const GgufNamePair& p : arch.blockTensors)
            if (m[2].str() == p.gguf)
                return "model.layers." + m[1].str() + "." + p.hf + "." + m[3].str();
        return {};
    }
    if (m[3].str() == "weight")
        for (const GgufNamePair& p : arch.expertTensors)
            if (m[2].str() == p.gguf)
                return "model.layers." + m[1].str() + "." + arch.expertModule + "." +
                       std::to_string(expert) + "." + p.hf + ".weight";
    return {};
}

bool ggufIsStacked(const GgufArchitecture& arch, const std::string& n) {
    return !hfNameOf(arch, n, 0).empty();
}

namespace {

// Whether block tensor `n` ("blk.N.<name>.weight|bias") has one of `names`.
bool blockTensorIn(const std::vector<std::string>& names, const std::string& n) {
    static const std::regex re(R"(blk\.\d+\.([a-z_]+)\.(weight|bias))");
    std::smatch m;
    return std::regex_match(n, m, re) &&
           std::find(names.begin(), names.end(), m[1].str()) != names.end();
}

} // namespace

bool ggufKeptF32(const GgufArchitecture& arch, const std::string& n) {
    return blockTensorIn(arch.keptF32, n);
}

bool ggufIsRowVector(const GgufArchitecture& arch, const std::string& n) {
    return blockTensorIn(arch.rowVectors, n);
}

std::string ggufHfKeyOf(const GgufArchitecture& arch, const std::string& key) {
    for (const GgufKey& k : arch.keys)
        if (key == k.key)
            return k.hfKey;
    return {};
}

const nlohmann::json* configNumber(const json& cfg, const std::string& key) {
    if (cfg.contains(key) && cfg[key].is_number())
        return &cfg[key];
    if (cfg.contains("rope_parameters") && cfg["rope_parameters"].is_object() &&
        cfg["rope_parameters"].contains(key) && cfg["rope_parameters"][key].is_number())
        return &cfg["rope_parameters"][key];
    return nullptr;
}

double ggufKeyValue(const GgufKey& k, const json& cfg) {
    if (const json* v = configNumber(cfg, k.hfKey))
        return v->get<double>();
    if (k.fallbackKey && std::string(k.fallbackKey) == "head_dim()") {
        const json* hidden = configNumber(cfg, "hidden_size");
        const json* heads = configNumber(cfg, "num_attention_heads");
        const int64_t h = heads ? heads->get<int64_t>() : 0;
        return h && hidden ? double(hidden->get<int64_t>() / h) : 0.0;
    }
    if (k.fallbackKey)
        if (const json* v = configNumber(cfg, k.fallbackKey))
            return v->get<double>();
    return k.fallback;
}

json ggufHfConfig(const GgufArchitecture& arch, const GgufHeader& h, const GgufFile& file,
                  const std::string& source) {
    json c;
    c["architectures"] = {arch.hfClass};
    c["model_type"] = arch.hfModelType;
    for (const GgufKey& k : arch.keys) {
        const std::string key = arch.name + "." + k.key;
        if (const GgufValue* v = h.find(key)) {
            if (k.isFloat)
                c[k.hfKey] = metadataNumber(*v, source, key);
            else
                c[k.hfKey] = requiredCount(h, key, source);
        } else if (k.required) {
            throw Error(source, key, "missing required metadata key");
        } else if (k.fallbackKey && std::string(k.fallbackKey) == "head_dim()") {
            c[k.hfKey] = c["hidden_size"].get<int64_t>() / c["num_attention_heads"].get<int64_t>();
        } else if (k.fallbackKey) {
            c[k.hfKey] = c[k.fallbackKey];
        } else if (k.isFloat) {
            c[k.hfKey] = k.fallback;
        } else {
            c[k.hfKey] = int64_t(k.fallback);
        }
    }
    // llama.cpp's head size, when the file gives one, over the RoPE dimension.
    const std::string keyLength = arch.name + ".attention.key_length";
    if (h.find(keyLength))
        c["head_dim"] = requiredCount(h, keyLength, source);
    const GgufTensorInfo* embed = file.find("token_embd.weight");
    if (!embed || embed->dims.size() != 2)
        throw Error(source, "token_embd.weight", "missing or not a matrix");
    c["vocab_size"] = embed->dims[1];
    c["rope_scaling"] = nullptr;
    const std::string scalingKey = arch.name + ".rope.scaling.type";
    if (const GgufValue* scaling = h.find(scalingKey)) {
        if (scaling->type != GgufValueType::String)
            throw Error(source, scalingKey, "must be a string");
        if (scaling->s == "linear") {
            const std::string factor = arch.name + ".rope.scaling.factor";
            c["rope_scaling"] = {
                {"rope_type", "linear"},
                {"factor", metadataNumber(required(h, factor, source), source, factor)}};
        } else if (scaling->s != "none") {
            throw Error(source, scalingKey,
                        "RoPE scaling '" + scaling->s + "' is not read from GGUF (linear is)");
        }
    }
    for (const auto& [key, value] : arch.fixedConfig.items())
        c[key] = value;
    c[arch.biasKey] = file.find("blk.0.attn_q.bias") != nullptr;
    c["tie_word_embeddings"] = file.find("output.weight") == nullptr;
    c["torch_dtype"] = "float32";
    return c;
}

} // namespace qs
