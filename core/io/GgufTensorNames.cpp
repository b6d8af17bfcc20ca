#include "io/GgufTensorNames.h"

#include <regex>

namespace qs {

namespace {

struct NamePair {
    const char* hf;
    const char* gguf;
};

// Tensors of the whole model, named in full.
const NamePair kModelTensors[] = {{"model.embed_tokens.weight", "token_embd.weight"},
                                  {"model.norm.weight", "output_norm.weight"},
                                  {"lm_head.weight", "output.weight"}};

// Tensors of block N: "model.layers.N.<hf>.weight|bias" <-> "blk.N.<gguf>.weight|bias".
const NamePair kBlockTensors[] = {
    {"self_attn.q_proj", "attn_q"},          {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},          {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},           {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},           {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"}};

} // namespace

std::string ggufNameOfHfTensor(const std::string& n) {
    for (const NamePair& p : kModelTensors)
        if (n == p.hf)
            return p.gguf;
    static const std::regex re(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
    std::smatch m;
    if (!std::regex_match(n, m, re))
        return {};
    for (const NamePair& p : kBlockTensors)
        if (m[2].str() == p.hf)
            return "blk." + m[1].str() + "." + p.gguf + "." + m[3].str();
    return {};
}

std::string hfNameOfGgufTensor(const std::string& n) {
    for (const NamePair& p : kModelTensors)
        if (n == p.gguf)
            return p.hf;
    // At most six digits: a block index a real file can have, and no overflow downstream.
    static const std::regex re(R"(blk\.(\d{1,6})\.([a-z_]+)\.(weight|bias))");
    std::smatch m;
    if (!std::regex_match(n, m, re))
        return {};
    for (const NamePair& p : kBlockTensors)
        if (m[2].str() == p.gguf)
            return "model.layers." + m[1].str() + "." + p.hf + "." + m[3].str();
    return {};
}

} // namespace qs
