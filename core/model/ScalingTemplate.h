// Which linears of a decoder block share an input and what produces that input: Quark's
// `scaling_layers` (AWQConfig, SmoothQuantConfig, AutoSmoothQuantConfig). SmoothQuant, AWQ and
// AutoSmoothQuant move a per-input-channel scale s between the preceding op (1/s) and the group's
// linears (s); the template says where that is exact. Each family declares its own
// (ModelFamily::scalingTemplate, in its file under model/families/). Torch-free.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace qs {

// One scaling group, names relative to the block ("self_attn.q_proj"), as Quark writes them.
struct ScalingGroup {
    std::string prevOp;              // a norm ("input_layernorm") or a linear ("mlp.up_proj")
    std::vector<std::string> layers; // the linears that consume prevOp's output
    std::string inp;                 // the linear whose captured inputs give the statistics
    // The module whose output a search measures (Quark's module2inspect): "self_attn", "mlp",
    // or empty for the single linear of `layers` itself.
    std::string module2inspect;

    bool operator==(const ScalingGroup& o) const {
        return prevOp == o.prevOp && layers == o.layers && inp == o.inp &&
               module2inspect == o.module2inspect;
    }
};

struct ScalingTemplate {
    std::vector<ScalingGroup> groups;
    // module2inspect name -> the block-relative linear whose output is that module's output
    // ("self_attn" -> "self_attn.o_proj"): the search stops the block forward there.
    std::map<std::string, std::string> moduleOutputs;
};

// Llama, Mistral, Qwen2 and Qwen3 (pre-norm RMSNorm decoders with separate projections):
// input_layernorm -> q,k,v; v_proj -> o_proj; post_attention_layernorm -> gate,up;
// up_proj -> down_proj.
ScalingTemplate llamaScalingTemplate();

// Quark's JSON form of the groups ([{"prev_op", "layers", "inp", "module2inspect"}, ...]).
nlohmann::json scalingGroupsToJson(const std::vector<ScalingGroup>& groups);
// Parses a recipe's scaling_layers; qs::Error(source, field + "[i]...", why) when malformed.
std::vector<ScalingGroup> scalingGroupsFromJson(const nlohmann::json& j, const std::string& source,
                                                const std::string& field);

} // namespace qs
