#include "synth/SyntheticModel.h"

#include "io/SafetensorsFile.h"
#include "synth/SyntheticTokenizer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <QDir>

#include <algorithm>
#include <cmath>
#include <functional>

namespace qs {

namespace {

// How one tensor's values are drawn: N(mean, std) plus optional planted outlier channels.
struct TensorPlan {
    TensorInfo info;
    double mean = 0.0;
    double std = 0.0;
    bool outliers = false; // multiply the planted channels by the outlier gain (norm gains)
    bool plusOne = false;  // Gemma's norms store w for a gain of (1 + w)
};

uint64_t nameSeed(uint64_t seed, const std::string& name) {
    // FNV-1a: a tensor's values depend on the seed and its name only, not on file order.
    uint64_t h = 1469598103934665603ull ^ seed;
    for (unsigned char c : name)
        h = (h ^ c) * 1099511628211ull;
    return h;
}

class Planner {
public:
    explicit Planner(DType dtype) : m_dtype(dtype) {}
    void add(const std::string& name, std::vector<int64_t> shape, double mean, double std,
             bool outliers = false, bool plusOne = false) {
        TensorPlan p;
        p.info.name = name;
        p.info.dtype = m_dtype;
        p.info.shape = std::move(shape);
        p.mean = mean;
        p.std = std;
        p.outliers = outliers;
        p.plusOne = plusOne;
        m_plans.push_back(std::move(p));
    }
    void linear(const std::string& name, int64_t out, int64_t in, double residualScale = 1.0,
                bool bias = false) {
        add(name + ".weight", {out, in}, 0.0, residualScale / std::sqrt(double(in)));
        if (bias)
            add(name + ".bias", {out}, 0.0, 0.02);
    }
    std::vector<TensorPlan>& plans() { return m_plans; }

private:
    DType m_dtype;
    std::vector<TensorPlan> m_plans;
};

at::Tensor materialize(const TensorPlan& p, const SyntheticModelOptions& o) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(nameSeed(o.seed, p.info.name));
    at::Tensor t = at::normal(p.mean, p.std, p.info.shape, gen, at::TensorOptions(at::kFloat));
    if (p.outliers)
        for (int64_t c : o.outlierChannels)
            if (c >= 0 && c < t.size(-1))
                t.select(-1, c).mul_(o.outlierGain);
    if (p.plusOne)
        t.sub_(1.0);
    return t;
}

// What a synthetic family's decoder looks like (mirrors model/families/).
struct FamilyShape {
    std::string architecture;
    bool fused = false;        // phi3: qkv_proj, gate_up_proj
    bool qkNorm = false;       // qwen3, qwen3_moe, gemma3_text
    bool gemma = false;        // (1 + w) norms, four per layer
    bool moe = false;          // mixtral, qwen3_moe, qwen2_moe
    bool sharedExpert = false; // qwen2_moe: mlp.shared_expert and its sigmoid gate
    bool parallel = false;     // phi, gptj, cohere: one norm feeds attention and MLP side by side
    std::string moePrefix, gateName, upName, downName;
};

FamilyShape shapeOf(const std::string& arch) {
    FamilyShape f;
    if (arch == "llama")
        f.architecture = "LlamaForCausalLM";
    else if (arch == "mistral")
        f.architecture = "MistralForCausalLM";
    else if (arch == "qwen2")
        f.architecture = "Qwen2ForCausalLM";
    else if (arch == "qwen3")
        f.architecture = "Qwen3ForCausalLM", f.qkNorm = true;
    else if (arch == "qwen3_moe")
        f.architecture = "Qwen3MoeForCausalLM", f.qkNorm = true, f.moe = true, f.moePrefix = "mlp",
        f.gateName = "gate_proj", f.upName = "up_proj", f.downName = "down_proj";
    else if (arch == "qwen2_moe")
        f.architecture = "Qwen2MoeForCausalLM", f.moe = true, f.sharedExpert = true,
        f.moePrefix = "mlp", f.gateName = "gate_proj", f.upName = "up_proj",
        f.downName = "down_proj";
    else if (arch == "mixtral")
        f.architecture = "MixtralForCausalLM", f.moe = true, f.moePrefix = "block_sparse_moe",
        f.gateName = "w1", f.upName = "w3", f.downName = "w2";
    else if (arch == "gemma2")
        f.architecture = "Gemma2ForCausalLM", f.gemma = true;
    else if (arch == "gemma3_text")
        f.architecture = "Gemma3ForCausalLM", f.gemma = true, f.qkNorm = true;
    else if (arch == "phi3")
        f.architecture = "Phi3ForCausalLM", f.fused = true;
    else if (arch == "phi")
        f.architecture = "PhiForCausalLM", f.parallel = true;
    else if (arch == "gptj")
        f.architecture = "GPTJForCausalLM", f.parallel = true;
    else if (arch == "cohere")
        f.architecture = "CohereForCausalLM", f.parallel = true;
    return f;
}

int64_t headDimOf(const SyntheticModelOptions& o) {
    return o.headDim > 0 ? o.headDim : o.hiddenSize / o.numHeads;
}

// Mixtral's experts are intermediate_size wide; Qwen3-MoE's have their own width.
int64_t expertWidth(const SyntheticModelOptions& o) {
    if (o.arch == "mixtral" || o.expertIntermediateSize <= 0)
        return o.intermediateSize;
    return o.expertIntermediateSize;
}

int64_t sharedWidth(const SyntheticModelOptions& o) {
    return o.sharedExpertIntermediateSize > 0 ? o.sharedExpertIntermediateSize : o.intermediateSize;
}

// config.json as transformers 5 writes it for the family (rope_parameters, layer_types).
nlohmann::json decoderConfig(const SyntheticModelOptions& o) {
    const std::string& a = o.arch;
    const FamilyShape f = shapeOf(a);
    const bool gemma3 = a == "gemma3_text";
    const double theta = a == "llama" || a == "mistral" || f.gemma || a == "phi3" ? 10000.0 : 1e6;
    nlohmann::json c = {{"architectures", {f.architecture}},
                        {"model_type", a},
                        {"hidden_size", o.hiddenSize},
                        {"intermediate_size", o.intermediateSize},
                        {"num_hidden_layers", o.numLayers},
                        {"num_attention_heads", o.numHeads},
                        {"num_key_value_heads", o.numKvHeads},
                        {"head_dim", headDimOf(o)},
                        {"vocab_size", o.vocabSize},
                        {"max_position_embeddings", o.maxPositions},
                        {"rms_norm_eps", f.gemma ? 1e-6 : 1e-5},
                        {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", theta}}},
                        {"tie_word_embeddings", o.tieWordEmbeddings},
                        {"bos_token_id", 1},
                        {"eos_token_id", 2}};
    if (a == "llama")
        c.update({{"hidden_act", "silu"}, {"attention_bias", false}, {"mlp_bias", false}});
    else if (!f.gemma)
        c["hidden_act"] = "silu";
    if (a == "mistral" || a == "mixtral" || a == "phi3")
        c["sliding_window"] = nullptr;
    if (a == "qwen2" || a == "qwen3" || a == "qwen3_moe" || a == "qwen2_moe") {
        c["use_sliding_window"] = false;
        c["layer_types"] = std::vector<std::string>(size_t(o.numLayers), "full_attention");
    }
    if (f.moe) {
        c[a == "mixtral" ? "num_local_experts" : "num_experts"] = o.numExperts;
        c["num_experts_per_tok"] = o.expertsPerToken;
    }
    if (a == "qwen3_moe")
        c.update({{"moe_intermediate_size", expertWidth(o)},
                  {"norm_topk_prob", true},
                  {"decoder_sparse_step", 1},
                  {"mlp_only_layers", nlohmann::json::array()}});
    if (a == "qwen2_moe")
        c.update({{"moe_intermediate_size", expertWidth(o)},
                  {"shared_expert_intermediate_size", sharedWidth(o)},
                  {"norm_topk_prob", false},
                  {"qkv_bias", true},
                  {"decoder_sparse_step", 1},
                  {"mlp_only_layers", nlohmann::json::array()}});
    if (f.gemma) {
        // Gemma 2 alternates sliding and full layers; Gemma 3 has five sliding per full one.
        std::vector<std::string> types;
        for (int64_t i = 0; i < o.numLayers; ++i)
            types.push_back((i + 1) % (gemma3 ? 6 : 2) != 0 ? "sliding_attention"
                                                            : "full_attention");
        c.update(
            {{"hidden_activation", "gelu_pytorch_tanh"},
             {"query_pre_attn_scalar", headDimOf(o)},
             {"sliding_window", std::max<int64_t>(1, std::min<int64_t>(4096, o.maxPositions / 4))},
             {"layer_types", types},
             {"attn_logit_softcapping", gemma3 ? nlohmann::json() : nlohmann::json(50.0)},
             {"final_logit_softcapping", gemma3 ? nlohmann::json() : nlohmann::json(30.0)}});
        if (gemma3)
            c["rope_parameters"] = {
                {"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    }
    return c;
}

nlohmann::json optConfig(const SyntheticModelOptions& o) {
    return {{"architectures", {"OPTForCausalLM"}},
            {"model_type", "opt"},
            {"hidden_size", o.hiddenSize},
            {"ffn_dim", o.intermediateSize},
            {"num_hidden_layers", o.numLayers},
            {"num_attention_heads", o.numHeads},
            {"vocab_size", o.vocabSize},
            {"max_position_embeddings", o.maxPositions},
            {"word_embed_proj_dim", o.hiddenSize},
            {"do_layer_norm_before", true},
            {"activation_function", "relu"},
            {"enable_bias", true},
            {"tie_word_embeddings", true},
            {"bos_token_id", 1},
            {"eos_token_id", 2},
            {"pad_token_id", 0}};
}

void planDecoder(Planner& p, const SyntheticModelOptions& o) {
    const FamilyShape f = shapeOf(o.arch);
    const int64_t H = o.hiddenSize, I = o.intermediateSize, hd = headDimOf(o);
    const int64_t qOut = o.numHeads * hd, kvOut = o.numKvHeads * hd;
    const double residual = 1.0 / std::sqrt(2.0 * double(o.numLayers));
    const bool qkvBias = o.arch == "qwen2" || o.arch == "qwen2_moe";
    auto norm = [&](const std::string& name, int64_t width, bool outliers) {
        p.add(name, {width}, 1.0, outliers ? 0.1 : 0.05, outliers, f.gemma);
    };
    p.add("model.embed_tokens.weight", {o.vocabSize, H}, 0.0, f.gemma ? 1.0 / std::sqrt(H) : 1.0);
    for (int64_t i = 0; i < o.numLayers; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        norm(b + "input_layernorm.weight", H, true);
        if (f.fused) {
            p.linear(b + "self_attn.qkv_proj", qOut + 2 * kvOut, H);
        } else {
            p.linear(b + "self_attn.q_proj", qOut, H, 1.0, qkvBias);
            p.linear(b + "self_attn.k_proj", kvOut, H, 1.0, qkvBias);
            p.linear(b + "self_attn.v_proj", kvOut, H, 1.0, qkvBias);
        }
        if (f.qkNorm) {
            norm(b + "self_attn.q_norm.weight", hd, false);
            norm(b + "self_attn.k_norm.weight", hd, false);
        }
        p.linear(b + "self_attn.o_proj", H, qOut, residual);
        norm(b + "post_attention_layernorm.weight", H, !f.gemma);
        if (f.gemma)
            norm(b + "pre_feedforward_layernorm.weight", H, true);
        if (f.moe) {
            const std::string m = b + f.moePrefix + ".";
            const int64_t E = expertWidth(o);
            p.linear(m + "gate", o.numExperts, H);
            for (int64_t e = 0; e < o.numExperts; ++e) {
                const std::string x = m + "experts." + std::to_string(e) + ".";
                p.linear(x + f.gateName, E, H);
                p.linear(x + f.upName, E, H);
                p.linear(x + f.downName, H, E, residual);
            }
            if (f.sharedExpert) {
                const int64_t S = sharedWidth(o);
                p.linear(m + "shared_expert." + f.gateName, S, H);
                p.linear(m + "shared_expert." + f.upName, S, H);
                p.linear(m + "shared_expert." + f.downName, H, S, residual);
                p.linear(m + "shared_expert_gate", 1, H);
            }
        } else if (f.fused) {
            p.linear(b + "mlp.gate_up_proj", 2 * I, H);
            p.linear(b + "mlp.down_proj", H, I, residual);
        } else {
            p.linear(b + "mlp.gate_proj", I, H);
            p.linear(b + "mlp.up_proj", I, H);
            p.linear(b + "mlp.down_proj", H, I, residual);
        }
        if (f.gemma)
            norm(b + "post_feedforward_layernorm.weight", H, false);
    }
    p.add("model.norm.weight", {H}, 1.0, 0.05, false, f.gemma);
    if (!o.tieWordEmbeddings)
        p.linear("lm_head", o.vocabSize, H);
}

void planOpt(Planner& p, const SyntheticModelOptions& o) {
    const int64_t H = o.hiddenSize, F = o.intermediateSize;
    const double residual = 1.0 / std::sqrt(2.0 * double(o.numLayers));
    p.add("model.decoder.embed_tokens.weight", {o.vocabSize, H}, 0.0, 1.0);
    p.add("model.decoder.embed_positions.weight", {o.maxPositions + 2, H}, 0.0, 0.1);
    for (int64_t i = 0; i < o.numLayers; ++i) {
        const std::string b = "model.decoder.layers." + std::to_string(i) + ".";
        p.add(b + "self_attn_layer_norm.weight", {H}, 1.0, 0.1, true);
        p.add(b + "self_attn_layer_norm.bias", {H}, 0.0, 0.02);
        for (const char* n : {"q_proj", "k_proj", "v_proj"})
            p.linear(b + "self_attn." + n, H, H, 1.0, true);
        p.linear(b + "self_attn.out_proj", H, H, residual, true);
        p.add(b + "final_layer_norm.weight", {H}, 1.0, 0.1, true);
        p.add(b + "final_layer_norm.bias", {H}, 0.0, 0.02);
        p.linear(b + "fc1", F, H, 1.0, true);
        p.linear(b + "fc2", H, F, residual, true);
    }
    p.add("model.decoder.final_layer_norm.weight", {H}, 1.0, 0.05);
    p.add("model.decoder.final_layer_norm.bias", {H}, 0.0, 0.02);
}

// Phi-2 rotates 0.4 of each head; where that is not an even count, half of it.
double phiRotaryFactor(int64_t headDim) {
    const int64_t r = int64_t(double(headDim) * 0.4);
    return r >= 2 && r % 2 == 0 ? 0.4 : 0.5;
}

// GPT-J-6B rotates 64 of its 256 head dimensions: a quarter, even, at least 2.
int64_t gptjRotaryDim(int64_t headDim) {
    return std::max<int64_t>(2, headDim / 4 / 2 * 2);
}

// config.json of the parallel families as transformers 5 writes them (GPT-J with its own keys).
nlohmann::json parallelConfig(const SyntheticModelOptions& o) {
    const std::string& a = o.arch;
    const int64_t hd = headDimOf(o);
    nlohmann::json c = {{"architectures", {shapeOf(a).architecture}},
                        {"model_type", a},
                        {"vocab_size", o.vocabSize},
                        {"tie_word_embeddings", o.tieWordEmbeddings},
                        {"bos_token_id", 1},
                        {"eos_token_id", 2}};
    if (a == "gptj") {
        c.update({{"n_embd", o.hiddenSize},
                  {"n_inner", o.intermediateSize},
                  {"n_layer", o.numLayers},
                  {"n_head", o.numHeads},
                  {"n_positions", o.maxPositions},
                  {"rotary_dim", gptjRotaryDim(hd)},
                  {"activation_function", "gelu_new"},
                  {"layer_norm_epsilon", 1e-5}});
        return c;
    }
    c.update({{"hidden_size", o.hiddenSize},
              {"intermediate_size", o.intermediateSize},
              {"num_hidden_layers", o.numLayers},
              {"num_attention_heads", o.numHeads},
              {"num_key_value_heads", o.numKvHeads},
              {"max_position_embeddings", o.maxPositions},
              {"layer_norm_eps", 1e-5}});
    if (a == "phi")
        c.update({{"hidden_act", "gelu_new"},
                  {"qk_layernorm", false},
                  {"rope_parameters",
                   {{"rope_type", "default"},
                    {"rope_theta", 10000.0},
                    {"partial_rotary_factor", phiRotaryFactor(hd)}}}});
    else // cohere: Command-R's theta and logit scale
        c.update({{"hidden_act", "silu"},
                  {"attention_bias", false},
                  {"use_qk_norm", false},
                  {"logit_scale", 0.0625},
                  {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 8e6}}}});
    return c;
}

void planParallel(Planner& p, const SyntheticModelOptions& o) {
    const std::string& a = o.arch;
    const bool gptj = a == "gptj", phi = a == "phi", cohere = a == "cohere";
    const int64_t H = o.hiddenSize, I = o.intermediateSize, hd = headDimOf(o);
    const int64_t kv = gptj ? o.numHeads : o.numKvHeads; // GPT-J has no grouped KV heads
    const double residual = 1.0 / std::sqrt(2.0 * double(o.numLayers));
    const std::string root = gptj ? "transformer." : "model.";
    auto norm = [&](const std::string& name, bool outliers) {
        p.add(name + ".weight", {H}, 1.0, outliers ? 0.1 : 0.05, outliers);
        if (!cohere)
            p.add(name + ".bias", {H}, 0.0, 0.02);
    };
    p.add(root + (gptj ? "wte.weight" : "embed_tokens.weight"), {o.vocabSize, H}, 0.0, 1.0);
    for (int64_t i = 0; i < o.numLayers; ++i) {
        const std::string b = root + (gptj ? "h." : "layers.") + std::to_string(i) + ".";
        norm(b + (gptj ? "ln_1" : "input_layernorm"), true);
        const std::string at = b + (gptj ? "attn." : "self_attn.");
        p.linear(at + "q_proj", o.numHeads * hd, H, 1.0, phi);
        p.linear(at + "k_proj", kv * hd, H, 1.0, phi);
        p.linear(at + "v_proj", kv * hd, H, 1.0, phi);
        p.linear(at + (gptj  ? "out_proj"
                       : phi ? "dense"
                             : "o_proj"),
                 H, o.numHeads * hd, residual, phi);
        if (cohere) {
            p.linear(b + "mlp.gate_proj", I, H);
            p.linear(b + "mlp.up_proj", I, H);
            p.linear(b + "mlp.down_proj", H, I, residual);
        } else {
            p.linear(b + (gptj ? "mlp.fc_in" : "mlp.fc1"), I, H, 1.0, true);
            p.linear(b + (gptj ? "mlp.fc_out" : "mlp.fc2"), H, I, residual, true);
        }
    }
    norm(gptj ? "transformer.ln_f" : phi ? "model.final_layernorm" : "model.norm", false);
    if (!o.tieWordEmbeddings)
        p.linear("lm_head", o.vocabSize, H, 1.0, !cohere);
}

std::string tensorBytes(const at::Tensor& t, DType dtype) {
    at::Tensor c = t;
    if (dtype == DType::BF16)
        c = t.to(at::kBFloat16);
    else if (dtype == DType::F16)
        c = t.to(at::kHalf);
    c = toHost(c);
    return std::string(static_cast<const char*>(c.data_ptr()), size_t(c.nbytes()));
}

void validate(const SyntheticModelOptions& o) {
    auto positive = [](int64_t v, const char* field) {
        if (v <= 0)
            throw Error("synth", field, "must be positive");
    };
    positive(o.hiddenSize, "hidden_size");
    positive(o.intermediateSize, "intermediate_size");
    positive(o.numLayers, "num_layers");
    positive(o.numHeads, "num_heads");
    positive(o.numKvHeads, "num_kv_heads");
    positive(o.maxPositions, "max_positions");
    const auto& archs = syntheticArchitectures();
    if (std::find(archs.begin(), archs.end(), o.arch) == archs.end()) {
        std::string known;
        for (const std::string& a : archs)
            known += (known.empty() ? "" : ", ") + a;
        throw Error("synth", "arch", "unknown architecture '" + o.arch + "' (" + known + ")");
    }
    if (o.headDim <= 0 && o.hiddenSize % o.numHeads != 0)
        throw Error("synth", "num_heads", "must divide hidden_size (or give head_dim)");
    if (o.numHeads % o.numKvHeads != 0)
        throw Error("synth", "num_kv_heads", "must divide num_heads");
    if (headDimOf(o) % 2 != 0)
        throw Error("synth", "num_heads", "head dimension must be even for rotary embeddings");
    if (o.arch == "opt" && o.headDim > 0 && o.headDim * o.numHeads != o.hiddenSize)
        throw Error("synth", "head_dim", "OPT's head dimension is hidden / heads");
    if (shapeOf(o.arch).parallel && o.headDim > 0 && o.headDim * o.numHeads != o.hiddenSize)
        throw Error("synth", "head_dim", "'" + o.arch + "' has a head dimension of hidden / heads");
    if ((o.arch == "phi" || o.arch == "gptj") && o.tieWordEmbeddings)
        throw Error("synth", "tie_word_embeddings",
                    "'" + o.arch + "' has a biased lm_head, which Quantscope does not tie");
    if (shapeOf(o.arch).moe &&
        (o.numExperts < 1 || o.expertsPerToken < 1 || o.expertsPerToken > o.numExperts))
        throw Error("synth", "experts_per_token", "must be between 1 and the number of experts");
    if (o.outDir.empty())
        throw Error("synth", "out", "output folder required");
}

} // namespace

const std::vector<std::string>& syntheticArchitectures() {
    static const std::vector<std::string> archs{
        "llama",  "mistral",     "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "mixtral",
        "gemma2", "gemma3_text", "phi3",  "opt",   "phi",       "gptj",      "cohere"};
    return archs;
}

void writeSyntheticModel(const SyntheticModelOptions& o,
                         const std::function<bool(int64_t, int64_t)>& progress) {
    validate(o);
    DType dtype;
    if (o.dtype == "F32")
        dtype = DType::F32;
    else if (o.dtype == "BF16")
        dtype = DType::BF16;
    else if (o.dtype == "F16")
        dtype = DType::F16;
    else
        throw Error("synth", "dtype", "unknown dtype '" + o.dtype + "' (F32, BF16 or F16)");
    Planner planner(dtype);
    if (o.arch == "opt")
        planOpt(planner, o);
    else if (shapeOf(o.arch).parallel)
        planParallel(planner, o);
    else
        planDecoder(planner, o);
    std::vector<TensorPlan>& plans = planner.plans();

    // Group tensors into shards of about shardBytes (one shard when 0).
    std::vector<std::vector<size_t>> shards(1);
    uint64_t current = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
        int64_t numel = 1;
        for (int64_t d : plans[i].info.shape)
            numel *= d;
        const uint64_t bytes = uint64_t(numel) * uint64_t(dtypeBits(dtype) / 8);
        if (o.shardBytes > 0 && current > 0 && current + bytes > uint64_t(o.shardBytes)) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(i);
        current += bytes;
    }

    if (!QDir().mkpath(QString::fromStdString(o.outDir)))
        throw Error(o.outDir, "", "cannot create the output folder");
    const QDir dir(QString::fromStdString(o.outDir));
    auto path = [&](const std::string& f) {
        return dir.filePath(QString::fromStdString(f)).toStdString();
    };

    nlohmann::json config = o.arch == "opt"            ? optConfig(o)
                            : shapeOf(o.arch).parallel ? parallelConfig(o)
                                                       : decoderConfig(o);
    const char* dtypeName = dtype == DType::F32    ? "float32"
                            : dtype == DType::BF16 ? "bfloat16"
                                                   : "float16";
    // llama and opt keep the transformers 4 spelling the older tests and tools were written
    // against; the newer families are written as transformers 5 writes them.
    config[o.arch == "llama" || o.arch == "opt" ? "torch_dtype" : "dtype"] = dtypeName;
    if (o.arch == "llama") {
        config.erase("rope_parameters");
        config["rope_theta"] = 10000.0;
        config["rope_scaling"] = nullptr;
    }
    config["quantscope_synthetic"] = {{"seed", o.seed},
                                      {"outlier_channels", o.outlierChannels},
                                      {"outlier_gain", o.outlierGain},
                                      {"sparse", o.sparse}};

    const int64_t total = int64_t(plans.size());
    int64_t done = 0;
    nlohmann::json weightMap = nlohmann::json::object();
    uint64_t totalSize = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
        const std::string file = shards.size() == 1
                                     ? "model.safetensors"
                                     : QString::asprintf("model-%05d-of-%05d.safetensors",
                                                         int(s + 1), int(shards.size()))
                                           .toStdString();
        std::vector<TensorInfo> layout;
        for (size_t i : shards[s])
            layout.push_back(plans[i].info);
        SafetensorsWriter writer(path(file), layout, {{"format", "pt"}});
        for (size_t i : shards[s]) {
            if (progress && !progress(done, total))
                throw Cancelled();
            if (o.sparse) {
                writer.skipNext();
            } else {
                const std::string bytes = tensorBytes(materialize(plans[i], o), dtype);
                writer.writeNext(bytes.data(), bytes.size());
                totalSize += bytes.size();
            }
            weightMap[plans[i].info.name] = file;
            ++done;
        }
        writer.commit();
    }
    if (shards.size() > 1) {
        const nlohmann::json index = {{"metadata", {{"total_size", totalSize}}},
                                      {"weight_map", weightMap}};
        writeFileAtomically(path("model.safetensors.index.json"), index.dump(2));
    }
    writeFileAtomically(path("tokenizer.json"),
                        buildSyntheticTokenizerJson(std::min<int64_t>(o.vocabSize, 4096)).dump(1));
    writeFileAtomically(path("tokenizer_config.json"),
                        nlohmann::json{{"tokenizer_class", "PreTrainedTokenizerFast"},
                                       {"bos_token", "<s>"},
                                       {"eos_token", "</s>"},
                                       {"unk_token", "<unk>"},
                                       {"add_bos_token", true},
                                       {"add_eos_token", false},
                                       {"model_max_length", o.maxPositions}}
                            .dump(2));
    writeFileAtomically(
        path("generation_config.json"),
        nlohmann::json{{"bos_token_id", 1}, {"eos_token_id", 2}, {"do_sample", false}}.dump(2));
    // config.json last: its presence marks a complete checkpoint (the GUI's demo check relies on
    // it).
    writeFileAtomically(path("config.json"), config.dump(2));
    if (progress)
        progress(total, total);
}

} // namespace qs
