#include "io/JsonFields.h"
#include "model/LlamaStyleFamily.h"
#include "util/Error.h"

namespace qs {

namespace {

// Reads a config.json list of integers (no_rope_layers, moe_layers); qs::Error naming the
// element that is not one.
std::vector<int64_t> intList(const JsonFields& f, const std::string& key, int64_t min,
                             int64_t max) {
    const nlohmann::json& v = f.object().at(key);
    if (!v.is_array())
        throw Error(f.source(), key, "expected a list of integers");
    std::vector<int64_t> out;
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string at = key + "[" + std::to_string(i) + "]";
        if (!v[i].is_number_integer() || v[i].get<int64_t>() < min || v[i].get<int64_t>() > max)
            throw Error(f.source(), at,
                        "expected an integer in [" + std::to_string(min) + ", " +
                            std::to_string(max) + "], got " + v[i].dump());
        out.push_back(v[i].get<int64_t>());
    }
    return out;
}

// Llama 4's text decoder (model_type llama4_text, Llama4ForCausalLM), as transformers 5
// computes it: a pre-norm RMSNorm decoder whose layers either rotate (no_rope_layers[i] = 1:
// RoPE on interleaved pairs, then with use_qk_norm a weightless L2 norm of q and k per head)
// or not (NoPE: no RoPE, no qk norm, and with attn_temperature_tuning q scaled by
// 1 + attn_scale * log1p(floor((pos + 1) / floor_scale))); layer_types picks chunked attention
// (keys of the query's own chunk of attention_chunk_size positions) or full causal attention.
// The feed-forward (feed_forward) is a dense SwiGLU of intermediate_size_mlp, or on moe_layers a
// MoE: the top-k of the router logits, each chosen expert applied to sigmoid(logit) * x, the
// experts' outputs summed, plus an ungated shared expert of intermediate_size on every token.
// The experts are stored fused (experts.gate_up_proj [E, H, 2I], gate first; experts.down_proj
// [E, I, H]).
class Llama4TextFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "llama4_text"; }
    std::vector<std::string> modelTypes() const override { return {"llama4_text"}; }
    std::vector<std::string> knownKeys() const override {
        std::vector<std::string> k = LlamaStyleFamily::knownKeys();
        // router_jitter_noise: transformers' Llama4Router never reads it (no noise even in
        // training), so it cannot change the forward; its value is still range-checked.
        // no_rope_layer_interval and interleave_moe_layer_step only derive no_rope_layers and
        // moe_layers when those are absent (read below).
        k.insert(k.end(),
                 {"intermediate_size_mlp", "num_local_experts", "num_experts_per_tok", "moe_layers",
                  "interleave_moe_layer_step", "no_rope_layers", "no_rope_layer_interval",
                  "layer_types", "attention_chunk_size", "use_qk_norm", "attn_temperature_tuning",
                  "floor_scale", "attn_scale", "router_jitter_noise"});
        return k;
    }
    double defaultNormEps() const override { return 1e-5; }
    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        LlamaStyleFamily::parseConfig(f, c);
        // transformers' Llama 4 has one attention_bias for q/k/v and o_proj (the base parser
        // sets both) and no MLP biases
        if (c.mlpBias)
            throw Error(src, "mlp_bias", "Llama 4's MLPs and experts have no biases");
        const int64_t L = c.numLayers;
        DecoderLayout& d = c.layout;
        d.ropeInterleaved = true; // transformers multiplies (x[2i], x[2i+1]) as complex numbers
        d.mlpName = "feed_forward";

        // RoPE / NoPE per layer: no_rope_layers (1 = RoPE; at least num_hidden_layers long),
        // else (absent or empty, as transformers) a NoPE layer every no_rope_layer_interval
        std::vector<int64_t> rope;
        if (f.has("no_rope_layers"))
            rope = intList(f, "no_rope_layers", 0, 1);
        if (rope.empty()) {
            const int64_t interval = f.optionalInt("no_rope_layer_interval", 4, 1, 1 << 20);
            for (int64_t i = 0; i < L; ++i)
                rope.push_back((i + 1) % interval != 0 ? 1 : 0);
        }
        if (int64_t(rope.size()) < L)
            throw Error(src, "no_rope_layers",
                        "lists " + std::to_string(rope.size()) +
                            " layers, fewer than "
                            "num_hidden_layers (" +
                            std::to_string(L) + ")");
        for (int64_t i = 0; i < L; ++i)
            d.ropeLayer.push_back(rope[size_t(i)] == 1);
        d.l2QkNorm = f.optionalBool("use_qk_norm", true);
        if (f.optionalBool("attn_temperature_tuning", true)) {
            d.tempScale = f.optionalDouble("attn_scale", 0.1, 0.0, 1e6);
            d.tempFloor = double(f.optionalInt("floor_scale", 8192, 1, int64_t(1) << 40));
        }

        // chunked or full attention per layer: layer_types, else chunked on the RoPE layers
        if (f.has("layer_types")) {
            const nlohmann::json& lt = f.object().at("layer_types");
            if (!lt.is_array() || int64_t(lt.size()) != L)
                throw Error(src, "layer_types",
                            "expected a list of num_hidden_layers (" + std::to_string(L) +
                                ") layer types");
            for (size_t i = 0; i < lt.size(); ++i) {
                const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : lt[i].dump();
                if (t != "full_attention" && t != "chunked_attention")
                    throw Error(src, "layer_types[" + std::to_string(i) + "]",
                                "unknown layer type '" + t +
                                    "' (Llama 4: full_attention, chunked_attention)");
                d.chunkedLayer.push_back(t == "chunked_attention");
            }
        } else {
            d.chunkedLayer = d.ropeLayer;
        }
        bool anyChunked = false;
        for (bool b : d.chunkedLayer)
            anyChunked = anyChunked || b;
        if (anyChunked) {
            // transformers refuses a chunked layer without a chunk size
            if (f.object().contains("attention_chunk_size") && !f.has("attention_chunk_size"))
                throw Error(src, "attention_chunk_size",
                            "null, but layer_types has chunked_attention layers");
            d.attentionChunk = f.optionalInt("attention_chunk_size", 8192, 1, int64_t(1) << 40);
        }
        f.optionalDouble("router_jitter_noise", 0.0, 0.0, 1e6);

        // feed-forward: dense of intermediate_size_mlp; MoE experts and shared expert of
        // intermediate_size on moe_layers (else every interleave_moe_layer_step-th layer)
        MoeConfig& m = c.moe;
        m.expertIntermediate = c.intermediateSize;
        c.intermediateSize = f.optionalInt("intermediate_size_mlp", 16384, 1, 1 << 22);
        m.numExperts = f.optionalInt("num_local_experts", 16, 1, 1 << 16);
        m.topK = f.optionalInt("num_experts_per_tok", 1, 1, m.numExperts);
        m.sparseLayer.assign(size_t(L), false);
        if (f.has("moe_layers")) {
            for (int64_t i : intList(f, "moe_layers", 0, L - 1))
                m.sparseLayer[size_t(i)] = true;
        } else {
            const int64_t step = f.optionalInt("interleave_moe_layer_step", 1, 1, 1 << 20);
            for (int64_t i = step - 1; i < L; i += step)
                m.sparseLayer[size_t(i)] = true;
        }
        m.scoreScalesInput = true;
        m.normTopK = false;
        m.prefix = "feed_forward";
        m.routerName = "router";
        m.gateName = "gate_proj", m.upName = "up_proj", m.downName = "down_proj";
        m.expertsPath = "experts";
        m.storage = ExpertStorage::GateUpHalves;
        m.expertBias = false;
        m.sharedIntermediate = m.expertIntermediate;
        m.sharedName = "shared_expert";
        m.sharedGateName.clear(); // every token, ungated
    }
};

} // namespace

const ModelFamily& llama4TextFamily() {
    static const Llama4TextFamily family;
    return family;
}

} // namespace qs
