#include "io/Checkpoint.h"
#include "io/JsonFields.h"
#include "model/ConfigParser.h"
#include "model/DbrxModel.h"
#include "model/LlamaStyleFamily.h"
#include "model/RopeConfig.h"
#include "util/Error.h"

#include <set>

namespace qs {

namespace {

// A nested config object (DBRX's attn_config, ffn_config): every key is metadata or one of
// `known`, anything else refused by name as at the top level.
void checkNestedKeys(const nlohmann::json& object, const std::string& source,
                     const std::string& field, const std::set<std::string>& known) {
    if (!object.is_object())
        throw Error(source, field, "expected an object");
    for (auto it = object.begin(); it != object.end(); ++it)
        if (!isConfigMetadataKey(it.key()) && !known.count(it.key()))
            throw Error(source, field + "." + it.key(),
                        "unknown key for model type 'dbrx': it may change the forward, and "
                        "Quantscope refuses rather than ignore it");
}

// DBRX (model_type dbrx, DbrxModel): its own keys (d_model, n_heads, n_layers, max_seq_len) and
// two nested configs, attn_config (clip_qkv, kv_n_heads, rope_theta) and ffn_config (the
// experts: moe_num_experts, moe_top_k, ffn_hidden_size, ffn_act_fn, moe_normalize_expert_weights).
class DbrxFamily : public ModelFamily {
public:
    std::string name() const override { return "dbrx"; }
    std::vector<std::string> modelTypes() const override { return {"dbrx"}; }
    std::vector<std::string> knownKeys() const override {
        return {"d_model",     "n_heads",    "n_layers",        "max_seq_len",
                "attn_config", "ffn_config", "rope_parameters", "num_key_value_heads",
                "emb_pdrop"};
    }

    void parseConfig(const JsonFields& f, ModelConfig& c) const override {
        const std::string& src = f.source();
        c.hiddenSize = f.requiredInt("d_model", 1, 1 << 20);
        c.numHeads = f.requiredInt("n_heads", 1, 4096);
        c.numLayers = f.requiredInt("n_layers", 1, 4096);
        c.maxPositions = f.optionalInt("max_seq_len", 2048, 1, int64_t(1) << 32);
        if (c.hiddenSize % c.numHeads != 0)
            throw Error(src, "n_heads", "does not divide d_model");
        c.headDim = c.hiddenSize / c.numHeads;
        c.normEps = 1e-5; // nn.LayerNorm's default: DBRX's norms take no eps from the config

        // attn_config
        const nlohmann::json attnObject =
            f.has("attn_config") ? f.object().at("attn_config") : nlohmann::json::object();
        checkNestedKeys(attnObject, src, "attn_config", {"clip_qkv", "kv_n_heads", "rope_theta"});
        const JsonFields attn(attnObject, src + " attn_config");
        c.numKvHeads = attn.optionalInt("kv_n_heads", 1, 1, c.numHeads);
        if (f.has("num_key_value_heads") &&
            f.requiredInt("num_key_value_heads", 1, c.numHeads) != c.numKvHeads)
            throw Error(src, "num_key_value_heads", "differs from attn_config.kv_n_heads");
        if (c.numHeads % c.numKvHeads != 0)
            throw Error(src, "attn_config.kv_n_heads", "does not divide n_heads");
        // Wqkv holds rows [q; k; v]: what the KV-cache and rotation refusals read (DbrxModel
        // always splits Wqkv itself)
        c.layout.fusedQkv = true;
        c.layout.clipQkv = attn.optionalDouble("clip_qkv", 0.0, 0.0, 1e30);
        const double theta = attn.optionalDouble("rope_theta", 10000.0, 1e-9, 1e30);
        if (f.has("rope_parameters")) {
            parseRope(f, c); // transformers 5 also writes the top-level rope_parameters
            if (attn.has("rope_theta") && c.rope.theta != theta)
                throw Error(src, "attn_config.rope_theta", "differs from rope_parameters");
        } else {
            c.rope.theta = theta;
        }
        if (c.rope.type != "default")
            throw Error(src, "rope_parameters", "DBRX's rotary embedding has no scaling");

        // ffn_config
        const nlohmann::json ffnObject =
            f.has("ffn_config") ? f.object().at("ffn_config") : nlohmann::json::object();
        checkNestedKeys(ffnObject, src, "ffn_config",
                        {"ffn_act_fn", "ffn_hidden_size", "hidden_size", "moe_jitter_eps",
                         "moe_loss_weight", "moe_normalize_expert_weights", "moe_num_experts",
                         "moe_top_k", "uniform_expert_assignment"});
        const JsonFields ffn(ffnObject, src + " ffn_config");
        MoeConfig& m = c.moe;
        m.numExperts = ffn.optionalInt("moe_num_experts", 4, 1, 1 << 16);
        m.topK = ffn.optionalInt("moe_top_k", 1, 1, m.numExperts);
        m.expertIntermediate = ffn.optionalInt("ffn_hidden_size", 3584, 1, 1 << 22);
        c.intermediateSize = m.expertIntermediate;
        if (ffn.has("hidden_size") && ffn.requiredInt("hidden_size", 1, 1 << 20) != c.hiddenSize)
            throw Error(src, "ffn_config.hidden_size", "differs from d_model");
        // The router divides the top-k probabilities by their p-norm; p = 1 (the only value
        // DBRX ships) is their sum, null leaves them as they are.
        if (!ffn.has("moe_normalize_expert_weights")) {
            m.normTopK = false;
        } else if (ffn.requiredDouble("moe_normalize_expert_weights", 0.0, 1e9) == 1.0) {
            m.normTopK = true;
        } else {
            throw Error(src, "ffn_config.moe_normalize_expert_weights",
                        "only 1 (divide by the sum) or null is computed by Quantscope");
        }
        if (ffn.optionalBool("uniform_expert_assignment", false))
            throw Error(src, "ffn_config.uniform_expert_assignment",
                        "routes tokens round-robin instead of by the router");
        // moe_jitter_eps and moe_loss_weight act in training only
        c.hiddenAct = "silu";
        if (ffn.has("ffn_act_fn")) {
            const nlohmann::json& act = ffnObject.at("ffn_act_fn");
            if (!act.is_object() || act.size() != 1 || !act.contains("name") ||
                !act.at("name").is_string() ||
                (act.at("name") != "silu" && act.at("name") != "gelu"))
                throw Error(src, "ffn_config.ffn_act_fn",
                            "expected {\"name\": \"silu\"} or {\"name\": \"gelu\"}");
            c.hiddenAct = act.at("name").get<std::string>();
        }
        m.prefix = "ffn";
        m.routerName = "router.layer";
        m.expertsPath = "experts.mlp";
        m.storage = ExpertStorage::DbrxRows;
        m.gateName = "w1";
        m.upName = "v1";
        m.downName = "w2";
    }

    ModuleNode buildTree(const ModelConfig& c, const Checkpoint& ckpt) const override {
        const int64_t H = c.hiddenSize, V = c.vocabSize, hd = c.headDim;
        auto inner = [](const std::string& name, const std::string& kind, int block) {
            return ModuleNode{name, kind, {}, "", 0, block, {}};
        };
        ModuleNode root = inner("transformer", "model", -1);
        root.children.push_back(weightLeaf(ckpt, "transformer.wte", "embedding", {V, H}, -1));
        for (int i = 0; i < int(c.numLayers); ++i) {
            const std::string p = DbrxModel::blockPrefix(i);
            const std::string n = p + "norm_attn_norm.";
            ModuleNode block = inner(p.substr(0, p.size() - 1), "block", i);
            ModuleNode attn = inner(n + "attn", "attention", i);
            attn.children = {
                weightLeaf(ckpt, n + "attn.Wqkv", "linear",
                           {(c.numHeads + 2 * c.numKvHeads) * hd, H}, i),
                weightLeaf(ckpt, n + "attn.out_proj", "linear", {H, c.numHeads * hd}, i)};
            block.children = {weightLeaf(ckpt, n + "norm_1", "norm", {H}, i), std::move(attn),
                              weightLeaf(ckpt, n + "norm_2", "norm", {H}, i),
                              moeNode(c, ckpt, p.substr(0, p.size() - 1), i)};
            root.children.push_back(std::move(block));
        }
        root.children.push_back(weightLeaf(ckpt, "transformer.norm_f", "norm", {H}, -1));
        if (c.tieWordEmbeddings)
            root.children.push_back(ModuleNode{"lm_head", "head", {V, H}, "tied", 0, -1, {}});
        else
            root.children.push_back(weightLeaf(ckpt, "lm_head", "head", {V, H}, -1));
        sumParameters(root);
        checkEveryTensorUsed(root, c, ckpt);
        return root;
    }

    std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                         std::shared_ptr<const Checkpoint> checkpoint,
                                         const ComputeOptions& compute) const override {
        return std::make_unique<DbrxModel>(config, std::move(checkpoint), compute);
    }
};

} // namespace

const ModelFamily& dbrxFamily() {
    static const DbrxFamily family;
    return family;
}

} // namespace qs
