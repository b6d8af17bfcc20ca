#include "model/ScalingTemplate.h"

#include "util/Error.h"

namespace qs {

ScalingTemplate llamaScalingTemplate() {
    ScalingTemplate t;
    t.groups = {
        {"input_layernorm",
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
         "self_attn.q_proj",
         "self_attn"},
        {"self_attn.v_proj", {"self_attn.o_proj"}, "self_attn.o_proj", ""},
        {"post_attention_layernorm", {"mlp.gate_proj", "mlp.up_proj"}, "mlp.gate_proj", "mlp"},
        {"mlp.up_proj", {"mlp.down_proj"}, "mlp.down_proj", ""},
    };
    t.moduleOutputs = {{"self_attn", "self_attn.o_proj"}, {"mlp", "mlp.down_proj"}};
    return t;
}

nlohmann::json scalingGroupsToJson(const std::vector<ScalingGroup>& groups) {
    nlohmann::json out = nlohmann::json::array();
    for (const ScalingGroup& g : groups) {
        nlohmann::json j = {{"prev_op", g.prevOp}, {"layers", g.layers}, {"inp", g.inp}};
        if (!g.module2inspect.empty())
            j["module2inspect"] = g.module2inspect;
        out.push_back(j);
    }
    return out;
}

std::vector<ScalingGroup> scalingGroupsFromJson(const nlohmann::json& j, const std::string& source,
                                                const std::string& field) {
    if (!j.is_array())
        throw Error(source, field, "must be a list of {prev_op, layers, inp[, module2inspect]}");
    std::vector<ScalingGroup> groups;
    for (size_t i = 0; i < j.size(); ++i) {
        const nlohmann::json& e = j[i];
        const std::string f = field + "[" + std::to_string(i) + "]";
        if (!e.is_object())
            throw Error(source, f, "must be an object");
        for (auto it = e.begin(); it != e.end(); ++it)
            if (it.key() != "prev_op" && it.key() != "layers" && it.key() != "inp" &&
                it.key() != "module2inspect")
                throw Error(source, f + "." + it.key(), "unknown key");
        ScalingGroup g;
        if (!e.contains("prev_op") || !e["prev_op"].is_string())
            throw Error(source, f + ".prev_op", "must be a module name");
        g.prevOp = e["prev_op"].get<std::string>();
        if (!e.contains("layers") || !e["layers"].is_array() || e["layers"].empty())
            throw Error(source, f + ".layers", "must be a non-empty list of linear names");
        for (const auto& l : e["layers"]) {
            if (!l.is_string())
                throw Error(source, f + ".layers", "must hold linear names");
            g.layers.push_back(l.get<std::string>());
        }
        if (!e.contains("inp") || !e["inp"].is_string())
            throw Error(source, f + ".inp", "must name the linear whose inputs are measured");
        g.inp = e["inp"].get<std::string>();
        if (e.contains("module2inspect") && !e["module2inspect"].is_null()) {
            if (!e["module2inspect"].is_string())
                throw Error(source, f + ".module2inspect", "must be a module name");
            g.module2inspect = e["module2inspect"].get<std::string>();
        }
        groups.push_back(std::move(g));
    }
    return groups;
}

} // namespace qs
