// config.json parsing: every family's good config, and bad ones refused with a message naming the
// file, the field and the reason.
#include "TestMain.h"
#include "model/ConfigParser.h"
#include "util/Error.h"

#include <QtTest>

#include <cmath>
#include <map>

using nlohmann::json;

class TestConfigParser : public QObject {
    Q_OBJECT

private:
    static json llama() {
        return {{"model_type", "llama"},
                {"architectures", {"LlamaForCausalLM"}},
                {"hidden_size", 64},
                {"intermediate_size", 172},
                {"num_hidden_layers", 5},
                {"num_attention_heads", 8},
                {"num_key_value_heads", 4},
                {"vocab_size", 512},
                {"max_position_embeddings", 512},
                {"rms_norm_eps", 1e-5},
                {"tie_word_embeddings", true},
                {"bos_token_id", 1},
                {"eos_token_id", 2}};
    }

    // Each patch merged into `base` is refused, naming the field it gives (`field`).
    static void verifyRefusedByField(const json& base,
                                     const std::vector<std::pair<json, std::string>>& cases) {
        for (const auto& [patch, field] : cases) {
            json bad = base;
            bad.merge_patch(patch);
            try {
                qs::parseModelConfig(bad.dump(), "/m/config.json");
                QFAIL(qPrintable(QString::fromStdString("accepted " + patch.dump())));
            } catch (const qs::Error& e) {
                QCOMPARE(e.field(), field);
            }
        }
    }

private Q_SLOTS:
    void llamaConfig() {
        const qs::ModelConfig c = qs::parseModelConfig(llama().dump(), "config.json");
        QCOMPARE(c.modelType, std::string("llama"));
        QCOMPARE(c.headDim, int64_t(8)); // derived: hidden / heads
        QCOMPARE(c.numKvHeads, int64_t(4));
        QVERIFY(c.tieWordEmbeddings);
        QCOMPARE(c.rope.type, std::string("default"));
        QCOMPARE(c.rope.theta, 10000.0);
        QCOMPARE(c.normEps, 1e-5);
    }

    void llama3RopeScaling() {
        json j = llama();
        j["rope_scaling"] = {{"rope_type", "llama3"},
                             {"factor", 8.0},
                             {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0},
                             {"original_max_position_embeddings", 8192}};
        j["eos_token_id"] = {128001, 128009}; // newer configs list several
        j["vocab_size"] = 128256;
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.type, std::string("llama3"));
        QCOMPARE(c.rope.factor, 8.0);
        QCOMPARE(c.rope.originalMaxPositions, int64_t(8192));
        QCOMPARE(c.eosTokenId, int64_t(128001));
    }

    void qwen2HasQkvBias() {
        json j = llama();
        j["model_type"] = "qwen2";
        j["sliding_window"] = 4096;
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QVERIFY(c.attentionBias);
        QVERIFY(!c.outputBias);
        QCOMPARE(c.slidingWindow, int64_t(0)); // use_sliding_window is off
    }

    void mistralSlidingWindow() {
        json j = llama();
        j["model_type"] = "mistral";
        j["sliding_window"] = 4096;
        QCOMPARE(qs::parseModelConfig(j.dump(), "c.json").slidingWindow, int64_t(4096));
    }

    // transformers 5: rope_theta inside rope_parameters, dtype for torch_dtype, null head_dim.
    void transformers5Spelling() {
        json j = llama();
        j["rope_parameters"] = {
            {"rope_type", "llama3"},   {"rope_theta", 500000.0},
            {"factor", 8.0},           {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
        j["dtype"] = "bfloat16";
        j["head_dim"] = nullptr;
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.theta, 500000.0);
        QCOMPARE(c.rope.type, std::string("llama3"));
        QCOMPARE(c.rope.originalMaxPositions, int64_t(64));
        QCOMPARE(c.torchDtype, std::string("bfloat16"));
        QCOMPARE(c.headDim, int64_t(8));
    }

    void transformers4Spelling() {
        json j = llama();
        j["rope_theta"] = 1e6;
        j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
        j["torch_dtype"] = "float16";
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.theta, 1e6);
        QCOMPARE(c.rope.type, std::string("linear"));
        QCOMPARE(c.rope.factor, 2.0);
        QCOMPARE(c.torchDtype, std::string("float16"));
    }

    void yarnAndDynamic() {
        json j = llama();
        j["rope_parameters"] = {{"rope_type", "yarn"},
                                {"rope_theta", 1e6},
                                {"factor", 4.0},
                                {"original_max_position_embeddings", 128},
                                {"beta_fast", 16}};
        qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.type, std::string("yarn"));
        QCOMPARE(c.rope.betaFast, 16.0);
        QCOMPARE(c.rope.betaSlow, 1.0);
        QVERIFY(!c.rope.attentionFactor);
        j["rope_parameters"] = {{"rope_type", "dynamic"}, {"rope_theta", 1e4}, {"factor", 2.0}};
        c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.type, std::string("dynamic"));
    }

    // Gemma 3: one rope per layer type, sliding layers from layer_types.
    void gemma3PerLayerTypeRope() {
        json j = llama();
        j["model_type"] = "gemma3_text";
        j["head_dim"] = 16;
        j["query_pre_attn_scalar"] = 16;
        j["sliding_window"] = 32;
        j["num_hidden_layers"] = 3;
        j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
        j["rope_parameters"] = {
            {"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
            {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
        j.erase("tie_word_embeddings");
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.theta, 1e6);
        QVERIFY(c.slidingRope);
        QCOMPARE(c.slidingRope->theta, 1e4);
        QVERIFY(c.slides(0) && !c.slides(1) && c.slides(2));
        QCOMPARE(&c.ropeFor(1), &c.rope);
        QVERIFY(c.tieWordEmbeddings); // Gemma's default
        QVERIFY(c.layout.normPlusOne && c.layout.qkNorm && c.layout.sandwichNorms);
        QCOMPARE(c.layout.attnScale, 0.25);
        j["layer_types"] = {"sliding_attention", "full_attention", "chunked_attention"};
        try {
            qs::parseModelConfig(j.dump(), "/m/config.json");
            QFAIL("accepted an unknown layer type");
        } catch (const qs::Error& e) {
            QVERIFY2(QString(e.what()).contains("layer_types[2]"), e.what());
        }
    }

    void qwen3MoeLayers() {
        json j = llama();
        j["model_type"] = "qwen3_moe";
        j["num_hidden_layers"] = 4;
        j["num_experts"] = 8;
        j["num_experts_per_tok"] = 2;
        j["moe_intermediate_size"] = 32;
        j["decoder_sparse_step"] = 2;
        j["mlp_only_layers"] = {3};
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.moe.numExperts, int64_t(8));
        QVERIFY(!c.isMoeLayer(0) && c.isMoeLayer(1) && !c.isMoeLayer(2) && !c.isMoeLayer(3));
        QVERIFY(!c.moe.normTopK); // transformers' default
    }

    // Qwen1.5-MoE: Qwen's MoE layers plus a gated shared expert of its own width; q/k/v biases
    // as qkv_bias says (true when absent, as older transformers always had them).
    void qwen2MoeSharedExpert() {
        json j = llama();
        j["model_type"] = "qwen2_moe";
        j["num_hidden_layers"] = 3;
        j["num_experts"] = 4;
        j["num_experts_per_tok"] = 2;
        j["moe_intermediate_size"] = 32;
        j["shared_expert_intermediate_size"] = 96;
        j["mlp_only_layers"] = {1};
        qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QVERIFY(c.isMoeLayer(0) && !c.isMoeLayer(1) && c.isMoeLayer(2));
        QCOMPARE(c.moe.sharedIntermediate, int64_t(96));
        QCOMPARE(c.moe.sharedGateName, std::string("shared_expert_gate"));
        QVERIFY(c.attentionBias && !c.outputBias && !c.moe.normTopK);
        j["qkv_bias"] = false;
        c = qs::parseModelConfig(j.dump(), "config.json");
        QVERIFY(!c.attentionBias);
        j.erase("shared_expert_intermediate_size");
        try {
            qs::parseModelConfig(j.dump(), "/m/config.json");
            QFAIL("accepted qwen2_moe without the shared expert's width");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("shared_expert_intermediate_size"));
        }
    }

    // gpt-oss: GptOssConfig's defaults where keys are absent (yarn, theta 150000, sliding on
    // even layers with a window of 128, attention biases, top-4, swiglu 1.702 / 7), the tiny
    // folder's values where given; keys GptOssConfig does not have are refused by name.
    void gptOssConfig() {
        json j = llama();
        j["model_type"] = "gpt_oss";
        j["num_hidden_layers"] = 3;
        j["intermediate_size"] = 32;
        j["num_local_experts"] = 8;
        qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.rope.type, std::string("yarn"));
        QCOMPARE(c.rope.factor, 32.0);
        QCOMPARE(c.rope.theta, 150000.0);
        QCOMPARE(c.rope.originalMaxPositions, int64_t(4096));
        QVERIFY(!c.rope.truncate);
        QCOMPARE(c.slidingWindow, int64_t(128));
        QVERIFY(c.slides(0) && !c.slides(1) && c.slides(2));
        QVERIFY(c.attentionBias && c.outputBias && !c.mlpBias && c.layout.attnSinks);
        const qs::MoeConfig& m = c.moe;
        QVERIFY(c.isMoeLayer(0) && c.isMoeLayer(1) && c.isMoeLayer(2));
        QCOMPARE(m.topK, int64_t(4));
        QCOMPARE(m.expertIntermediate, int64_t(32));
        QVERIFY(m.routerBias && m.softmaxAfterTopK && !m.normTopK && m.expertBias);
        QVERIFY(m.storage == qs::ExpertStorage::GateUpInterleaved);
        QCOMPARE(m.routerName, std::string("router"));
        QCOMPARE(m.swigluAlpha, 1.702);
        QCOMPARE(m.swigluLimit, 7.0);
        j["num_experts_per_tok"] = 2;
        j["swiglu_limit"] = 0.5;
        j["sliding_window"] = 32;
        j["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
        j["rope_parameters"] = {{"rope_type", "yarn"},
                                {"rope_theta", 10000.0},
                                {"factor", 8.0},
                                {"original_max_position_embeddings", 64},
                                {"truncate", false}};
        c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.moe.topK, int64_t(2));
        QCOMPARE(c.moe.swigluLimit, 0.5);
        QCOMPARE(c.slidingWindow, int64_t(32));
        QVERIFY(!c.slides(0) && c.slides(1) && !c.slides(2));
        QCOMPARE(c.rope.theta, 10000.0);
        QCOMPARE(c.rope.factor, 8.0);
        verifyRefusedByField(j, {{{{"mlp_bias", true}}, "mlp_bias"},
                                 {{{"swiglu_limit", 0.0}}, "swiglu_limit"},
                                 {{{"num_experts_per_tok", 9}}, "num_experts_per_tok"},
                                 {{{"layer_types", {"full_attention"}}}, "layer_types"},
                                 {{{"router_jitter_noise", 0.1}}, "router_jitter_noise"}});
        j.erase("num_local_experts");
        try {
            qs::parseModelConfig(j.dump(), "/m/config.json");
            QFAIL("accepted gpt_oss without num_local_experts");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("num_local_experts"));
        }
    }

    // DBRX: its own top-level keys and two nested configs, each key of which is read or
    // refused by its dotted name as strictly as the top level; DbrxConfig's shapes (kv_n_heads,
    // ffn_hidden_size, the experts) and the routing's normalisation (p = 1: by the sum).
    void dbrxConfig() {
        const json j = {
            {"model_type", "dbrx"},
            {"vocab_size", 512},
            {"d_model", 64},
            {"n_heads", 4},
            {"n_layers", 3},
            {"max_seq_len", 256},
            {"attn_config", {{"clip_qkv", 0.5}, {"kv_n_heads", 2}, {"rope_theta", 5e5}}},
            {"ffn_config",
             {{"ffn_hidden_size", 48},
              {"moe_num_experts", 4},
              {"moe_top_k", 2},
              {"moe_normalize_expert_weights", 1.0},
              {"ffn_act_fn", {{"name", "silu"}}}}}};
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.hiddenSize, int64_t(64));
        QCOMPARE(c.headDim, int64_t(16));
        QCOMPARE(c.numKvHeads, int64_t(2));
        QCOMPARE(c.layout.clipQkv, 0.5);
        QVERIFY(c.layout.fusedQkv);
        QCOMPARE(c.rope.theta, 5e5);
        QCOMPARE(c.moe.expertIntermediate, int64_t(48));
        QCOMPARE(c.moe.topK, int64_t(2));
        QVERIFY(c.moe.normTopK);
        QVERIFY(c.moe.storage == qs::ExpertStorage::DbrxRows);
        QCOMPARE(c.moe.expertsPath, std::string("experts.mlp"));
        json unnormalised = j;
        unnormalised["ffn_config"].erase("moe_normalize_expert_weights");
        QVERIFY(!qs::parseModelConfig(unnormalised.dump(), "config.json").moe.normTopK);
        verifyRefusedByField(
            j, {{{{"attn_config", {{"qk_ln", true}}}}, "attn_config.qk_ln"},
                {{{"ffn_config", {{"moe_normalize_expert_weights", 2.0}}}},
                 "ffn_config.moe_normalize_expert_weights"},
                {{{"ffn_config", {{"ffn_act_fn", {{"name", "relu"}}}}}}, "ffn_config.ffn_act_fn"},
                {{{"ffn_config", {{"hidden_size", 32}}}}, "ffn_config.hidden_size"},
                {{{"num_key_value_heads", 4}}, "num_key_value_heads"},
                {{{"attn_config", {{"kv_n_heads", 3}}}}, "attn_config.kv_n_heads"}});
    }

    // DeepSeek-V3: MLA dims, the softmax scale with yarn's mscale^2, the dense first layers and
    // the routing; what it cannot compute is refused by field.
    void deepseekV3Config() {
        json j = llama();
        j["model_type"] = "deepseek_v3";
        j["num_hidden_layers"] = 3;
        j["num_key_value_heads"] = 8;
        for (const auto& [k, v] : std::map<std::string, int>{{"q_lora_rank", 40},
                                                             {"kv_lora_rank", 24},
                                                             {"qk_nope_head_dim", 20},
                                                             {"qk_rope_head_dim", 8},
                                                             {"v_head_dim", 12},
                                                             {"moe_intermediate_size", 32},
                                                             {"n_routed_experts", 8},
                                                             {"num_experts_per_tok", 2},
                                                             {"n_group", 4},
                                                             {"topk_group", 2},
                                                             {"n_shared_experts", 2},
                                                             {"first_k_dense_replace", 1}})
            j[k] = v;
        j["rope_parameters"] = {{"rope_type", "yarn"},   {"rope_theta", 10000.0},
                                {"factor", 40.0},        {"mscale", 1.0},
                                {"mscale_all_dim", 1.0}, {"original_max_position_embeddings", 64}};
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.headDim, int64_t(8));
        const double m = 0.1 * std::log(40.0) + 1.0;
        QVERIFY(std::fabs(c.mla.scale - m * m / std::sqrt(28.0)) < 1e-12);
        QVERIFY(!c.isMoeLayer(0) && c.isMoeLayer(1) && c.isMoeLayer(2));
        QVERIFY(c.moe.sigmoidScores && c.moe.correctionBias && c.moe.normTopK);
        QCOMPARE(c.moe.sharedIntermediate, int64_t(64));
        QVERIFY(c.layout.ropeInterleaved);
        verifyRefusedByField(j, {{{{"attention_bias", true}}, "attention_bias"},
                                 {{{"scoring_func", "softmax"}}, "scoring_func"},
                                 {{{"n_group", 3}}, "n_group"},
                                 {{{"qk_head_dim", 30}}, "qk_head_dim"},
                                 {{{"num_key_value_heads", 4}}, "num_key_value_heads"}});
    }

    // Llama 4 text: the per-layer lists as written, else derived as transformers'
    // Llama4TextConfig derives them; what would change the forward unread is refused by field.
    void llama4TextConfig() {
        json j = llama();
        j["model_type"] = "llama4_text";
        j["num_hidden_layers"] = 4;
        j["tie_word_embeddings"] = false;
        j["intermediate_size"] = 64;
        j["intermediate_size_mlp"] = 128;
        j["num_local_experts"] = 4;
        j["num_experts_per_tok"] = 2;
        j["interleave_moe_layer_step"] = 2;
        j["attention_chunk_size"] = 16;
        j["floor_scale"] = 8;
        // derived: a NoPE layer every 4th (no_rope_layer_interval), chunked where RoPE, MoE on
        // every 2nd layer from 1
        qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.layout.ropeLayer, (std::vector<bool>{true, true, true, false}));
        QCOMPARE(c.layout.chunkedLayer, (std::vector<bool>{true, true, true, false}));
        QVERIFY(!c.isMoeLayer(0) && c.isMoeLayer(1) && !c.isMoeLayer(2) && c.isMoeLayer(3));
        QCOMPARE(c.intermediateSize, int64_t(128));
        QCOMPARE(c.moe.expertIntermediate, int64_t(64));
        QCOMPARE(c.moe.sharedIntermediate, int64_t(64));
        QVERIFY(c.moe.scoreScalesInput && c.moe.storage == qs::ExpertStorage::GateUpHalves);
        QVERIFY(c.layout.ropeInterleaved && c.layout.l2QkNorm);
        QCOMPARE(c.layout.attentionChunk, int64_t(16));
        QCOMPARE(c.layout.tempScale, 0.1);
        QCOMPARE(c.layout.tempFloor, 8.0);
        QCOMPARE(c.layout.mlpName, std::string("feed_forward"));
        // written lists win over the intervals
        j["no_rope_layers"] = {0, 1, 1, 1};
        j["layer_types"] = {"full_attention", "full_attention", "chunked_attention",
                            "full_attention"};
        j["moe_layers"] = {0};
        j["attn_temperature_tuning"] = false;
        c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.layout.ropeLayer, (std::vector<bool>{false, true, true, true}));
        QCOMPARE(c.layout.chunkedLayer, (std::vector<bool>{false, false, true, false}));
        QVERIFY(c.isMoeLayer(0) && !c.isMoeLayer(1) && !c.isMoeLayer(3));
        QCOMPARE(c.layout.tempScale, 0.0);
        verifyRefusedByField(
            j, {{{{"no_rope_layers", {1, 2, 1, 0}}}, "no_rope_layers[1]"},
                {{{"no_rope_layers", {1, 1}}}, "no_rope_layers"},
                {{{"layer_types",
                   {"sliding_attention", "full_attention", "full_attention", "full_attention"}}},
                 "layer_types[0]"},
                {{{"moe_layers", {4}}}, "moe_layers[0]"},
                {{{"mlp_bias", true}}, "mlp_bias"},
                {{{"router_jitter_noise", -1.0}}, "router_jitter_noise"},
                {{{"attention_chunk", 16}}, "attention_chunk"}});
        // a chunked layer needs a chunk size (transformers raises too)
        json bad = j;
        bad["attention_chunk_size"] = nullptr;
        try {
            qs::parseModelConfig(bad.dump(), "/m/config.json");
            QFAIL("accepted chunked layers with attention_chunk_size null");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("attention_chunk_size"));
        }
    }

    void optConfig() {
        const json j = {{"model_type", "opt"},       {"hidden_size", 768},
                        {"ffn_dim", 3072},           {"num_hidden_layers", 12},
                        {"num_attention_heads", 12}, {"max_position_embeddings", 2048},
                        {"vocab_size", 50272},       {"word_embed_proj_dim", 768}};
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.positionOffset, int64_t(2));
        QVERIFY(c.tieWordEmbeddings); // OPT's default
        QVERIFY(c.enableBias);
        QCOMPARE(c.hiddenAct, std::string("relu"));
    }

    // The parallel families' configs as their hub checkpoints write them (transformers 4:
    // Phi-2's top-level partial_rotary_factor, GPT-J-6B's own keys with n_inner null,
    // c4ai-command-r-v01 without tie_word_embeddings), and their refusals by field.
    static json phi2() {
        return {{"model_type", "phi"},
                {"architectures", {"PhiForCausalLM"}},
                {"hidden_size", 2560},
                {"intermediate_size", 10240},
                {"num_hidden_layers", 32},
                {"num_attention_heads", 32},
                {"num_key_value_heads", 32},
                {"vocab_size", 51200},
                {"max_position_embeddings", 2048},
                {"layer_norm_eps", 1e-5},
                {"hidden_act", "gelu_new"},
                {"partial_rotary_factor", 0.4},
                {"qk_layernorm", false},
                {"rope_scaling", nullptr},
                {"rope_theta", 10000.0},
                {"resid_pdrop", 0.1},
                {"tie_word_embeddings", false},
                {"torch_dtype", "float16"}};
    }
    static json gptj6b() {
        return {{"model_type", "gptj"},
                {"architectures", {"GPTJForCausalLM"}},
                {"n_embd", 4096},
                {"n_head", 16},
                {"n_layer", 28},
                {"n_inner", nullptr},
                {"n_positions", 2048},
                {"rotary", true},
                {"rotary_dim", 64},
                {"scale_attn_weights", true},
                {"activation_function", "gelu_new"},
                {"layer_norm_epsilon", 1e-5},
                {"summary_type", "cls_index"},
                {"summary_use_proj", true},
                {"tie_word_embeddings", false},
                {"vocab_size", 50400},
                {"gradient_checkpointing", false}};
    }
    static json commandR() {
        return {{"model_type", "cohere"},
                {"architectures", {"CohereForCausalLM"}},
                {"hidden_size", 8192},
                {"intermediate_size", 22528},
                {"num_hidden_layers", 40},
                {"num_attention_heads", 64},
                {"num_key_value_heads", 64},
                {"vocab_size", 256000},
                {"max_position_embeddings", 8192},
                {"layer_norm_eps", 1e-5},
                {"logit_scale", 0.0625},
                {"rope_theta", 8000000.0},
                {"use_qk_norm", false},
                {"attention_bias", false},
                {"hidden_act", "silu"}};
    }

    void parallelFamilies() {
        const qs::ModelConfig phi = qs::parseModelConfig(phi2().dump(), "config.json");
        QVERIFY(phi.layout.parallelBlock && phi.layout.layerNorm && phi.layout.normBias);
        QVERIFY(phi.layout.headBias && !phi.layout.ropeInterleaved);
        QCOMPARE(int64_t(double(phi.headDim) * phi.rope.partialRotaryFactor), int64_t(32));
        json noFactor = phi2();
        noFactor.erase("partial_rotary_factor"); // PhiConfig's default: half the head
        QCOMPARE(qs::parseModelConfig(noFactor.dump(), "c").rope.partialRotaryFactor, 0.5);

        const qs::ModelConfig gptj = qs::parseModelConfig(gptj6b().dump(), "config.json");
        QCOMPARE(gptj.headDim, int64_t(256));
        QCOMPARE(gptj.intermediateSize, int64_t(4 * 4096)); // n_inner null
        QCOMPARE(int64_t(double(gptj.headDim) * gptj.rope.partialRotaryFactor), int64_t(64));
        QVERIFY(gptj.layout.ropeInterleaved && gptj.layout.headBias && !gptj.attentionBias);
        QCOMPARE(gptj.numKvHeads, gptj.numHeads);

        const qs::ModelConfig cohere = qs::parseModelConfig(commandR().dump(), "config.json");
        QVERIFY(cohere.tieWordEmbeddings); // CohereConfig's default
        QVERIFY(cohere.layout.layerNorm && !cohere.layout.normBias);
        QCOMPARE(cohere.layout.logitScale, 0.0625);
        QCOMPARE(cohere.rope.theta, 8e6);

        struct Bad {
            json config;
            const char* field;
        };
        auto with = [](json j, const char* key, json value) {
            j[key] = value;
            return j;
        };
        json noRotary = gptj6b();
        noRotary.erase("rotary_dim");
        const std::vector<Bad> bad = {
            {with(phi2(), "qk_layernorm", true), "qk_layernorm"},
            {with(phi2(), "tie_word_embeddings", true), "tie_word_embeddings"},
            {with(phi2(), "partial_rotary_factor", 0.3625), "partial_rotary_factor"}, // 29 dims
            {noRotary, "rotary_dim"},
            {with(gptj6b(), "rotary_dim", 63), "rotary_dim"},
            {with(gptj6b(), "scale_attn_weights", false), "scale_attn_weights"},
            {with(gptj6b(), "num_key_value_heads", 4), "num_key_value_heads"}, // not a GPT-J key
            {with(commandR(), "use_qk_norm", true), "use_qk_norm"},
            {with(commandR(), "head_dim", 128), "head_dim"},
        };
        for (const Bad& b : bad) {
            try {
                qs::parseModelConfig(b.config.dump(), "config.json");
                QFAIL(b.field);
            } catch (const qs::Error& e) {
                QVERIFY2(e.field() == b.field, e.what());
                QVERIFY2(std::string(e.what()).find("config.json") != std::string::npos, e.what());
            }
        }
    }

    void badConfigs_data() {
        QTest::addColumn<QString>("patch"); // JSON merged into the good llama config
        QTest::addColumn<QString>("remove");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("reason");
        QTest::newRow("missing hidden_size") << "{}"
                                             << "hidden_size"
                                             << "hidden_size"
                                             << "missing";
        QTest::newRow("string layers") << R"({"num_hidden_layers":"5"})"
                                       << ""
                                       << "num_hidden_layers"
                                       << "expected an integer";
        QTest::newRow("fractional heads") << R"({"num_attention_heads":8.5})"
                                          << ""
                                          << "num_attention_heads"
                                          << "expected an integer";
        QTest::newRow("negative vocab") << R"({"vocab_size":-1})"
                                        << ""
                                        << "vocab_size"
                                        << "outside";
        QTest::newRow("kv does not divide") << R"({"num_key_value_heads":3})"
                                            << ""
                                            << "num_key_value_heads"
                                            << "not a multiple";
        QTest::newRow("unknown type") << R"({"model_type":"gpt_neox"})"
                                      << ""
                                      << "model_type"
                                      << "unsupported model type";
        QTest::newRow("bad act") << R"({"hidden_act":"swiglu9"})"
                                 << ""
                                 << "hidden_act"
                                 << "unsupported";
        QTest::newRow("bad rope") << R"({"rope_scaling":{"rope_type":"mrope","factor":4}})"
                                  << ""
                                  << "rope_scaling.rope_type"
                                  << "unsupported";
        QTest::newRow("unknown rope field")
            << R"({"rope_parameters":{"rope_type":"linear","factor":4,"rope_theta":1e4,"beta_fast":3}})"
            << ""
            << "rope_parameters.beta_fast"
            << "not understood";
        QTest::newRow("llama3 without its lengths")
            << R"({"rope_parameters":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4}})"
            << ""
            << "rope_parameters.original_max_position_embeddings"
            << "missing";
        QTest::newRow("both rope spellings")
            << R"({"rope_parameters":{"rope_type":"default"},"rope_scaling":{"rope_type":"linear","factor":2}})"
            << ""
            << "rope_scaling"
            << "ambiguous";
        QTest::newRow("unknown key") << R"({"attn_temperature":0.5})"
                                     << ""
                                     << "attn_temperature"
                                     << "unknown key";
        QTest::newRow("sliding window on llama") << R"({"sliding_window":16})"
                                                 << ""
                                                 << "sliding_window"
                                                 << "unknown key";
        // Quark exports are opened (dequantized on load); other methods are refused.
        QTest::newRow("quantized checkpoint, not Quark")
            << R"({"quantization_config":{"quant_method":"gptq"}})"
            << ""
            << "quantization_config"
            << "does not read";
        QTest::newRow("rope without factor") << R"({"rope_scaling":{"rope_type":"linear"}})"
                                             << ""
                                             << "factor"
                                             << "missing";
        QTest::newRow("bool as string") << R"({"tie_word_embeddings":"yes"})"
                                        << ""
                                        << "tie_word_embeddings"
                                        << "expected true or false";
        QTest::newRow("bos beyond vocab") << R"({"bos_token_id":999})"
                                          << ""
                                          << "bos_token_id"
                                          << "beyond vocab_size";
        QTest::newRow("odd head dim") << R"({"head_dim":7})"
                                      << ""
                                      << "head_dim"
                                      << "even";
        QTest::newRow("huge layers") << R"({"num_hidden_layers":100000000})"
                                     << ""
                                     << "num_hidden_layers"
                                     << "outside";
        QTest::newRow("no model_type") << "{}"
                                       << "model_type"
                                       << "model_type"
                                       << "missing";
    }

    void badConfigs() {
        QFETCH(QString, patch);
        QFETCH(QString, remove);
        QFETCH(QString, field);
        QFETCH(QString, reason);
        json j = llama();
        j.merge_patch(json::parse(patch.toStdString()));
        if (!remove.isEmpty())
            j.erase(remove.toStdString());
        try {
            qs::parseModelConfig(j.dump(), "/m/config.json");
            QFAIL("accepted a bad config");
        } catch (const qs::Error& e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains("/m/config.json"), qPrintable(msg));
            QVERIFY2(msg.contains(field), qPrintable(msg));
            QVERIFY2(msg.contains(reason), qPrintable(msg));
        }
    }

    void notJson() {
        for (const char* text : {"", "{", "[1,2]", "{\"model_type\": }", "\xff\xfe",
                                 "{\"model_type\":\"llama\",\"vocab_size\":1e400}"}) {
            try {
                qs::parseModelConfig(text, "/m/config.json");
                QFAIL(text);
            } catch (const qs::Error& e) {
                QVERIFY(QString::fromUtf8(e.what()).contains("/m/config.json"));
            }
        }
    }

    void missingFile() {
        try {
            qs::loadModelConfig("/nonexistent/folder");
            QFAIL("no error");
        } catch (const qs::Error& e) {
            QVERIFY(QString::fromUtf8(e.what()).contains("config.json: file not found"));
        }
    }
};

QS_TEST_APPLESS_MAIN(TestConfigParser)
#include "tst_configparser.moc"
