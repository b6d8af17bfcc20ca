#include "model/ConfigParser.h"

#include "io/JsonFields.h"
#include "model/ModelFamily.h"
#include "util/Error.h"

#include <QDir>

#include <set>

namespace qs {

namespace {

// bos/eos ids may be an integer, null or (newer configs) a list whose first entry is used.
int64_t tokenId(const JsonFields& f, const std::string& key) {
    if (!f.has(key))
        return -1;
    const nlohmann::json& v = f.object().at(key);
    if (v.is_array()) {
        if (v.empty())
            return -1;
        nlohmann::json first = nlohmann::json::object({{key, v.front()}});
        return JsonFields(first, f.source()).requiredInt(key, 0, INT32_MAX);
    }
    return f.requiredInt(key, 0, INT32_MAX);
}

// Keys any config.json may carry that do not change an fp32 forward in eval mode: identity,
// bookkeeping, training-only settings (dropout, initialisation, auxiliary losses) and the
// generation defaults old transformers versions wrote into every config.
const std::set<std::string>& metadataKeys() {
    static const std::set<std::string> keys{
        "model_type",
        "architectures",
        "transformers_version",
        "_name_or_path",
        "auto_map",
        "dtype",
        "torch_dtype",
        "vocab_size",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "tie_word_embeddings",
        "use_cache",
        "initializer_range",
        "init_std",
        "attention_dropout",
        "dropout",
        "hidden_dropout",
        "activation_dropout",
        "embd_pdrop",
        "resid_pdrop",
        "attn_pdrop",
        "layerdrop",
        "output_router_logits",
        "router_aux_loss_coef",
        "router_z_loss_coef",
        "cache_implementation",
        "id2label",
        "label2id",
        "tokenizer_class",
        "prefix",
        "task_specific_params",
        "problem_type",
        "finetuning_task",
        "is_decoder",
        "is_encoder_decoder",
        "add_cross_attention",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "torchscript",
        "use_return_dict",
        "chunk_size_feed_forward",
        "pruned_heads",
        "tie_encoder_decoder",
        "cross_attention_hidden_size",
        "max_length",
        "min_length",
        "do_sample",
        "early_stopping",
        "num_beams",
        "num_beam_groups",
        "diversity_penalty",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        "repetition_penalty",
        "length_penalty",
        "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size",
        "bad_words_ids",
        "num_return_sequences",
        "output_scores",
        "return_dict_in_generate",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
        "tf_legacy_loss",
        "use_bfloat16",
        "xla_device",
        "gradient_checkpointing",
        "model_name",
        "quantscope_synthetic"}; // provenance of `quantscope-cli synth` models
    return keys;
}

// Every key is either metadata or one the family reads; anything else is refused by name.
void checkKeys(const nlohmann::json& j, const ModelFamily& family, const std::string& source) {
    const std::vector<std::string> known = family.knownKeys();
    const std::set<std::string> familyKeys(known.begin(), known.end());
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        if (metadataKeys().count(k) || familyKeys.count(k))
            continue;
        if (k == "quantization_config") {
            // AMD Quark hf_format exports (Quark's and ours) are opened: their weights are
            // dequantized on load (io/QuarkFolder.h), so the forward reads plain tensors.
            if (it.value().is_object() && it.value().value("quant_method", "") == "quark")
                continue;
            throw Error(source, k,
                        "the checkpoint is quantized with a method Quantscope does not read "
                        "(it opens full-precision checkpoints, AMD Quark hf_format exports and "
                        "its own fake-quantized exports)");
        }
        throw Error(source, k,
                    "unknown key for model type '" + family.name() +
                        "': it may change the forward, and Quantscope refuses rather than "
                        "ignore it");
    }
}

} // namespace

bool isConfigMetadataKey(const std::string& key) {
    return metadataKeys().count(key) > 0;
}

ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source) {
    const nlohmann::json j = parseJsonText(jsonText, source);
    const JsonFields f(j, source);
    ModelConfig c;
    c.source = source;
    c.raw = j;
    c.modelType = f.requiredString("model_type");
    if (f.has("architectures")) {
        const nlohmann::json& a = j.at("architectures");
        if (!a.is_array() || a.empty() || !a.front().is_string())
            throw Error(source, "architectures", "expected a non-empty list of class names");
        c.architecture = a.front().get<std::string>();
    }
    c.vocabSize = f.requiredInt("vocab_size", 1, 1 << 24);
    // transformers 5 writes "dtype", older versions "torch_dtype"
    c.torchDtype =
        f.has("dtype") ? f.requiredString("dtype") : f.optionalString("torch_dtype", "float32");
    c.bosTokenId = tokenId(f, "bos_token_id");
    c.eosTokenId = tokenId(f, "eos_token_id");
    c.tieWordEmbeddings = f.optionalBool("tie_word_embeddings", false);
    const ModelFamily& family = familyFor(c.modelType, source);
    checkKeys(j, family, source);
    family.parseConfig(f, c);
    if (c.bosTokenId >= c.vocabSize)
        throw Error(source, "bos_token_id", "id beyond vocab_size");
    if (c.eosTokenId >= c.vocabSize)
        throw Error(source, "eos_token_id", "id beyond vocab_size");
    return c;
}

ModelConfig loadModelConfig(const std::string& directory) {
    const std::string path =
        QDir(QString::fromStdString(directory)).filePath("config.json").toStdString();
    return parseModelConfig(readTextFile(path), path);
}

} // namespace qs
