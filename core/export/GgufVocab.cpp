#include "export/GgufVocab.h"

#include "tokenize/HfJson.h"
#include "tokenize/PreTokenPattern.h"
#include "util/Error.h"
#include "util/Strings.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace qs {

namespace {

using nlohmann::json;

// The score gguf-py gives every token it has no score for (LlamaHfVocab, padding, added tokens).
constexpr float kDefaultScore = -1000.0f;

// A string member, or the "content" of an AddedToken object written in its place (tokenizer
// configs hold either); empty when absent or of another type.
std::string tokenName(const json& node, const std::string& key) {
    if (!node.is_object() || !node.contains(key))
        return {};
    const json& v = node.at(key);
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v.at("content").is_string())
        return v.at("content").get<std::string>();
    return {};
}

std::string specialTokenOf(const json& templateEntry) {
    if (!templateEntry.is_object() || !templateEntry.contains("SpecialToken"))
        return {};
    return tokenName(templateEntry.at("SpecialToken"), "id");
}

std::string sequenceOf(const json& templateEntry) {
    if (!templateEntry.is_object() || !templateEntry.contains("Sequence"))
        return {};
    return tokenName(templateEntry.at("Sequence"), "id");
}

struct AddedToken {
    int64_t id = 0;
    std::string content;
    bool special = false;
};

// What the converter takes from tokenizer.json: the model's vocabulary by id, the added tokens
// and the rest of the document.
struct TokenizerJson {
    std::string path;
    json root;
    std::vector<std::string> base; // model.vocab by id: ids 0..N-1, all present
    std::vector<AddedToken> added; // in file order
};

TokenizerJson readTokenizerJson(const std::string& path) {
    TokenizerJson t;
    t.path = path;
    std::optional<json> root = hfjson::readOptionalDocument(path);
    if (!root)
        throw Error(path, "",
                    std::string("cannot read (GGUF needs the sentencepiece tokenizer.model or a "
                                "Hugging Face tokenizer.json): ") +
                        std::strerror(errno));
    t.root = std::move(*root);
    if (!t.root.is_object())
        throw Error(path, "", "expected a JSON object (a Hugging Face tokenizer.json)");
    const json& model = hfjson::member(t.root, "model", path, "");
    const json& vocab = hfjson::member(model, "vocab", path, "model");
    if (!vocab.is_object())
        throw Error(path, "model.vocab", "expected an object of token: id");
    t.base.assign(vocab.size(), std::string());
    std::vector<bool> seen(vocab.size(), false);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        const int32_t id =
            hfjson::tokenId(it.value(), path, "model.vocab", "id of token '" + it.key() + "'");
        // The converter walks ids 0..N-1 of the vocabulary: an id outside it or twice is a hole.
        if (size_t(id) >= seen.size() || seen[size_t(id)])
            throw Error(path, "model.vocab",
                        "ids must be 0.." + std::to_string(vocab.size() - 1) +
                            " each once; token '" + it.key() + "' has id " + std::to_string(id));
        seen[size_t(id)] = true;
        t.base[size_t(id)] = it.key();
    }
    const json added = t.root.contains("added_tokens") && !t.root["added_tokens"].is_null()
                           ? t.root["added_tokens"]
                           : json::array();
    if (!added.is_array() || added.size() > hfjson::kMaxAddedTokens)
        throw Error(path, "added_tokens",
                    "expected an array of at most " + std::to_string(hfjson::kMaxAddedTokens) +
                        " tokens (kMaxAddedTokens)");
    for (size_t i = 0; i < added.size(); ++i) {
        const std::string field = "added_tokens[" + std::to_string(i) + "]";
        const json& a = added[i];
        if (!a.is_object() || !a.contains("content") || !a["content"].is_string())
            throw Error(path, field, "expected an object with integer id and string content");
        AddedToken token;
        token.id = hfjson::tokenId(hfjson::member(a, "id", path, field), path, field + ".id", "id");
        token.content = a["content"].get<std::string>();
        token.special = hfjson::boolOr(a, "special", false, path, field);
        t.added.push_back(std::move(token));
    }
    return t;
}

// gguf-py's SpecialVocab: special token ids from tokenizer_config.json's *_token entries (looked
// up among tokenizer.json's added tokens) and from config.json's *_token_id, the first found
// winning; add_*_token flags from the post-processor template, overridden by
// tokenizer_config.json's add_*_token. `tokenCount` bounds the ids (SpecialVocab's n_vocab).
class SpecialVocabReader {
public:
    SpecialVocabReader(const TokenizerJson& tokenizer, const std::optional<json>& tokenizerConfig,
                       const std::optional<json>& config, size_t tokenCount)
        : m_tokenCount(tokenCount) {
        std::map<std::string, std::string> names; // type -> token text (tokenizer_config)
        const bool haveConfig = tokenizerConfig && tokenizerConfig->is_object() &&
                                !tokenizerConfig->empty(); // Python: `if tokenizer_config`
        if (haveConfig)
            for (const std::string& type : m_types)
                names[type] = tokenName(*tokenizerConfig, type + "_token");
        if (haveConfig && names["bos"].empty() && !names["cls"].empty())
            names["bos"] = names["cls"];
        if (haveConfig && names["eos"].empty() && !names["sep"].empty())
            names["eos"] = names["sep"];
        readPostProcessor(tokenizer.root, haveConfig, names);
        if (haveConfig) {
            for (const std::string& type : m_types) {
                const json& add = tokenizerConfig->value("add_" + type + "_token", json());
                if (add.is_boolean())
                    setAdd(type, add.get<bool>());
                const std::string& name = names[type];
                if (name.empty())
                    continue;
                for (const AddedToken& a : tokenizer.added)
                    if (a.content == name) {
                        setId(type, a.id);
                        break;
                    }
            }
        }
        if (config && config->is_object())
            for (const std::string& type : m_types) {
                json id = config->value(type + "_token_id", json());
                if (id.is_null() && config->contains("text_config") &&
                    (*config)["text_config"].is_object())
                    id = (*config)["text_config"].value(type + "_token_id", json());
                if (id.is_number_integer() && id.get<int64_t>() >= 0)
                    setId(type, id.get<int64_t>());
            }
    }

    // Metadata keys as gguf-py's GGUFWriter names them; types without a writer (cls) are
    // skipped, as add_to_gguf skips them.
    std::vector<std::pair<std::string, uint32_t>> ids() const {
        static const std::map<std::string, std::string> keys = {
            {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"unk", "unknown_token_id"},
            {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"},
            {"eot", "eot_token_id"},       {"eom", "eom_token_id"}};
        std::vector<std::pair<std::string, uint32_t>> out;
        for (const auto& [type, id] : m_ids)
            if (const auto k = keys.find(type); k != keys.end())
                out.emplace_back("tokenizer.ggml." + k->second, uint32_t(id));
        return out;
    }
    std::vector<std::pair<std::string, bool>> adds() const {
        std::vector<std::pair<std::string, bool>> out;
        for (const auto& [type, add] : m_adds)
            if (type == "bos" || type == "eos" || type == "sep")
                out.emplace_back("tokenizer.ggml.add_" + type + "_token", add);
        return out;
    }

private:
    // The crude TemplateProcessing reading of SpecialVocab: a leading special token means
    // add_bos, a trailing one add_eos (a trailing token that is not tokenizer_config's eos
    // becomes the eos, the old one eot); "A <sep> B" in the pair template means add_sep.
    void readPostProcessor(const json& root, bool haveConfig,
                           std::map<std::string, std::string>& names) {
        const json post = root.value("post_processor", json());
        if (!post.is_object())
            return;
        const json processors = post.contains("processors") && post["processors"].is_array()
                                    ? post["processors"]
                                    : json::array({post});
        for (const json& p : processors) {
            if (!p.is_object())
                continue;
            const std::string type =
                p.value("type", json()).is_string() ? p["type"].get<std::string>() : std::string();
            if (type == "RobertaProcessing") {
                setAdd("bos", true);
                setAdd("eos", true);
                setAdd("sep", true);
                continue;
            }
            if (type != "TemplateProcessing")
                continue;
            const json single = p.value("single", json::array());
            const json pair = p.value("pair", json::array());
            std::string first, last;
            if (single.is_array() && single.size() > 1) {
                first = specialTokenOf(single.front());
                if (!first.empty()) {
                    if (!haveConfig)
                        names["bos"] = first;
                    setAdd("bos", first == names["bos"] || first == names["cls"]);
                }
                last = specialTokenOf(single.back());
                if (!last.empty()) {
                    if (!haveConfig) {
                        names["eos"] = last;
                    } else if (last != names["eos"]) {
                        const std::string spare =
                            std::find(m_types.begin(), m_types.end(), "eot") == m_types.end()
                                ? "eot"
                                : "eom";
                        if (std::find(m_types.begin(), m_types.end(), spare) == m_types.end()) {
                            m_types.push_back(spare);
                            names[spare] = names["eos"];
                        }
                        names["eos"] = last;
                    }
                    setAdd("eos", last == names["eos"]);
                }
            }
            if (!pair.is_array() || pair.empty())
                continue;
            const size_t begin = !first.empty() && specialTokenOf(pair.front()) == first ? 1 : 0;
            const size_t end = !last.empty() && specialTokenOf(pair.back()) == last
                                   ? pair.size() - 1
                                   : pair.size();
            if (begin >= end)
                continue;
            const std::vector<json> middle(pair.begin() + long(begin), pair.begin() + long(end));
            if (sequenceOf(middle.front()) != "A" || sequenceOf(middle.back()) != "B" ||
                middle.size() < 3)
                continue;
            bool addSep = false;
            const std::string entry = specialTokenOf(middle[1]);
            if (!entry.empty() && (entry == names["sep"] || entry == names["eos"]) && last.empty())
                addSep = true;
            if (middle.size() == 4) {
                const std::string second = specialTokenOf(middle[2]);
                if (!second.empty() && (second == names["sep"] || second == names["eos"]))
                    addSep = true;
            }
            setAdd("sep", addSep);
            if (addSep && names["sep"].empty() && haveConfig)
                names["sep"] = names["eos"];
        }
    }

    void setId(const std::string& type, int64_t id) {
        if (size_t(id) >= m_tokenCount)
            return; // SpecialVocab skips an id outside the vocabulary (with a warning)
        for (const auto& entry : m_ids)
            if (entry.first == type)
                return; // the first source naming it wins
        m_ids.emplace_back(type, id);
    }
    void setAdd(const std::string& type, bool add) {
        for (auto& entry : m_adds)
            if (entry.first == type) {
                entry.second = add; // a Python dict keeps the key's first position
                return;
            }
        m_adds.emplace_back(type, add);
    }

    std::vector<std::string> m_types{"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
    size_t m_tokenCount;
    std::vector<std::pair<std::string, int64_t>> m_ids;
    std::vector<std::pair<std::string, bool>> m_adds;
};

// transformers' all_special_tokens: the tokens tokenizer_config.json / special_tokens_map.json
// name as bos/eos/unk/sep/pad/cls/mask or additional_special_tokens.
std::set<std::string> namedSpecialTokens(const std::optional<json>& tokenizerConfig,
                                         const std::optional<json>& specialTokensMap) {
    std::set<std::string> names;
    for (const std::optional<json>* doc : {&tokenizerConfig, &specialTokensMap}) {
        if (!*doc || !(*doc)->is_object())
            continue;
        for (const char* type : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"})
            if (const std::string n = tokenName(**doc, std::string(type) + "_token"); !n.empty())
                names.insert(n);
        const json extra = (*doc)->value("additional_special_tokens", json::array());
        if (extra.is_array())
            for (const json& e : extra) {
                const json wrapped = {{"t", e}};
                if (const std::string n = tokenName(wrapped, "t"); !n.empty())
                    names.insert(n);
            }
    }
    return names;
}

bool isByteToken(const std::string& t) {
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && std::isxdigit(uint8_t(t[3])) &&
           std::isxdigit(uint8_t(t[4])) && t[5] == '>';
}

// The converter's does_token_look_special: added tokens some models forget to mark special.
bool looksSpecial(const std::string& t) {
    if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]")
        return true;
    if (startsWith(t, "<|") && endsWith(t, "|>"))
        return true;
    if (startsWith(t, "<\xEF\xBD\x9C") && endsWith(t, "\xEF\xBD\x9C>")) // <｜ ... ｜>
        return true;
    return startsWith(t, "<unused") && endsWith(t, ">");
}

// model.merges as "left right" strings: the legacy form as is, the [left, right] form joined
// with the spaces inside a part written as U+0120 ("Ġ"), as SpecialVocab does.
std::vector<std::string> mergesOf(const TokenizerJson& t) {
    const json& merges = hfjson::member(t.root["model"], "merges", t.path, "model");
    if (!merges.is_array() || merges.size() > hfjson::kMaxMerges)
        throw Error(t.path, "model.merges",
                    "expected an array of at most " + std::to_string(hfjson::kMaxMerges) +
                        " merges (kMaxMerges)");
    std::vector<std::string> out;
    out.reserve(merges.size());
    auto escape = [](std::string s) {
        std::string o;
        for (char c : s)
            o += c == ' ' ? std::string("\xC4\xA0") : std::string(1, c);
        return o;
    };
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& m = merges[i];
        if (m.is_string())
            out.push_back(m.get<std::string>());
        else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
            out.push_back(escape(m[0].get<std::string>()) + " " + escape(m[1].get<std::string>()));
        else
            throw Error(t.path, "model.merges[" + std::to_string(i) + "]",
                        "expected \"left right\" or [left, right]");
    }
    return out;
}

// Scores for llama.cpp's sentencepiece tokenizer, which merges the adjacent pair whose joined
// text is the token of highest score (ties: leftmost). gguf-py's LlamaHfVocab gives every token
// -1000, which makes that leftmost-first and not the BPE's rank order (measured on a synthetic
// model: different ids than the tokenizer.json's own for most words). Here the token a merge
// produces scores -rank, so that llama.cpp applies the merges in the BPE's order, as a
// sentencepiece BPE model's own scores do; tokens no merge produces (bytes, characters,
// specials) score below every merge.
std::vector<float> rankScores(const std::vector<std::string>& tokens,
                              const std::vector<std::string>& merges) {
    std::unordered_map<std::string, size_t> id;
    for (size_t k = 0; k < tokens.size(); ++k)
        id.emplace(tokens[k], k);
    std::vector<float> scores(tokens.size(), -float(merges.size()) - 1.0f);
    std::vector<bool> scored(tokens.size(), false);
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t space = m.find(' ');
        if (space == std::string::npos)
            continue;
        const auto it = id.find(m.substr(0, space) + m.substr(space + 1));
        if (it != id.end() && !scored[it->second]) {
            scores[it->second] = -float(rank);
            scored[it->second] = true;
        }
    }
    return scores;
}

// The pre-tokenizer's name in llama.cpp (tokenizer.ggml.pre) for the byte-level layouts whose
// split regex llama.cpp implements: GPT-2's ByteLevel, and Split(regex) + ByteLevel(no regex) with
// GPT-2's, Llama 3's or Qwen2's regex. The converter identifies a tokenizer by a hash of its ids
// for a fixed text, which needs the real vocabulary; the regex is what that name selects.
std::string llamaPreName(const TokenizerJson& t) {
    const json pre = t.root.value("pre_tokenizer", json());
    auto refuse = [&](const std::string& field, const std::string& why) {
        return Error(t.path, field,
                     why + "; llama.cpp's byte-level BPE (tokenizer.ggml.pre) implements "
                           "ByteLevel with GPT-2's regex (gpt-2), or Split with the Llama 3 "
                           "(llama-bpe) or Qwen2 (qwen2) regex followed by ByteLevel");
    };
    auto byteLevel = [&](const json& node, const std::string& field, bool useRegex) {
        if (!node.is_object() || node.value("type", json()) != "ByteLevel")
            throw refuse(field + ".type", "expected ByteLevel");
        if (hfjson::boolOr(node, "add_prefix_space", false, t.path, field))
            throw refuse(field + ".add_prefix_space", "a prefix space is not added by llama.cpp");
        if (hfjson::boolOr(node, "use_regex", true, t.path, field) != useRegex)
            throw refuse(field + ".use_regex", useRegex ? "expected true" : "expected false");
    };
    if (!pre.is_object())
        throw refuse("pre_tokenizer", "missing");
    const std::string type = hfjson::typeOf(pre, t.path, "pre_tokenizer");
    if (type == "ByteLevel") {
        byteLevel(pre, "pre_tokenizer", true);
        return "gpt-2";
    }
    const json steps = pre.value("pretokenizers", json());
    if (type != "Sequence" || !steps.is_array() || steps.size() != 2)
        throw refuse("pre_tokenizer", "pre-tokenizer '" + type + "' of this layout");
    const json& split = steps[0];
    const std::string field = "pre_tokenizer.pretokenizers[0]";
    if (hfjson::typeOf(split, t.path, field) != "Split")
        throw refuse(field + ".type", "expected Split");
    const hfjson::Pattern pattern = hfjson::pattern(split, t.path, field);
    const std::optional<PreTokenPattern> known =
        pattern.isRegex ? recognizePreTokenPattern(pattern.text) : std::nullopt;
    if (!known)
        throw refuse(field + ".pattern", "split pattern '" + pattern.text + "' is not one of them");
    if (hfjson::stringOr(split, "behavior", "", t.path, field) != "Isolated" ||
        hfjson::boolOr(split, "invert", false, t.path, field))
        throw refuse(field + ".behavior", "expected Isolated, not inverted");
    byteLevel(steps[1], "pre_tokenizer.pretokenizers[1]", false);
    const bool ignoreMerges =
        hfjson::boolOr(t.root["model"], "ignore_merges", false, t.path, "model");
    // llama.cpp ignores merges (a piece in the vocabulary is one token) for Llama 3 only.
    if (ignoreMerges != (*known == PreTokenPattern::Llama3))
        throw Error(t.path, "model.ignore_merges",
                    std::string(ignoreMerges ? "true" : "false") + " with the " +
                        (*known == PreTokenPattern::Llama3 ? "Llama 3" : "GPT-2/Qwen2") +
                        " regex: llama.cpp ignores merges exactly for Llama 3 (llama-bpe)");
    switch (*known) {
    case PreTokenPattern::Gpt2:
        return "gpt-2";
    case PreTokenPattern::Llama3:
        return "llama-bpe";
    case PreTokenPattern::Qwen2:
        return "qwen2";
    }
    return {};
}

void padTo(GgufVocab& v, int64_t modelVocabSize, const std::string& source,
           const std::string& configPath) {
    if (int64_t(v.tokens.size()) > modelVocabSize)
        throw Error(source, "model.vocab",
                    std::to_string(v.tokens.size()) + " tokens, more than " + configPath +
                        "'s vocab_size " + std::to_string(modelVocabSize) +
                        " (the embedding's rows, which llama.cpp requires the tokens to match)");
    for (int64_t i = int64_t(v.tokens.size()); i < modelVocabSize; ++i) {
        v.tokens.push_back("[PAD" + std::to_string(i) + "]");
        v.types.push_back(int32_t(GgufTokenType::Unused));
        if (v.model == "llama")
            v.scores.push_back(kDefaultScore);
    }
}

} // namespace

GgufVocab tokenizerJsonGgufVocab(const std::string& sourceDir, int64_t modelVocabSize) {
    const TokenizerJson t = readTokenizerJson(sourceDir + "/tokenizer.json");
    const std::optional<json> tokenizerConfig =
        hfjson::readOptionalDocument(sourceDir + "/tokenizer_config.json");
    const std::optional<json> specialMap =
        hfjson::readOptionalDocument(sourceDir + "/special_tokens_map.json");
    const std::optional<json> config = hfjson::readOptionalDocument(sourceDir + "/config.json");
    const std::string configPath = sourceDir + "/config.json";
    const json& model = t.root["model"];
    const std::string modelType = hfjson::typeOf(model, t.path, "model");
    if (modelType != "BPE")
        throw Error(t.path, "model.type",
                    "'" + modelType +
                        "' tokenizer: GGUF export writes BPE tokenizers only (sentencepiece-style "
                        "with byte_fallback, or byte-level)");
    const bool byteFallback = hfjson::boolOr(model, "byte_fallback", false, t.path, "model");
    const json decoder = t.root.value("decoder", json());
    const std::string decoderType =
        decoder.is_object() ? hfjson::typeOf(decoder, t.path, "decoder") : std::string();

    GgufVocab v;
    if (byteFallback && decoderType == "Sequence") {
        // LlamaHfVocab: the vocabulary by id, then the added tokens above it.
        v.model = "llama";
        v.pre = "default";
        const std::set<std::string> specialNames = namedSpecialTokens(tokenizerConfig, specialMap);
        std::unordered_map<std::string, int64_t> idOf; // transformers' get_vocab()
        for (size_t k = 0; k < t.base.size(); ++k)
            idOf.emplace(t.base[k], int64_t(k));
        std::vector<AddedToken> above;
        for (const AddedToken& a : t.added) {
            idOf[a.content] = a.id;
            if (a.id >= int64_t(t.base.size()))
                above.push_back(a);
        }
        std::set<int64_t> specialIds;
        for (const std::string& n : specialNames)
            if (const auto it = idOf.find(n); it != idOf.end())
                specialIds.insert(it->second);
        for (size_t k = 0; k < t.base.size(); ++k) {
            v.tokens.push_back(t.base[k]);
            v.types.push_back(int32_t(isByteToken(t.base[k])         ? GgufTokenType::Byte
                                      : specialIds.count(int64_t(k)) ? GgufTokenType::Control
                                                                     : GgufTokenType::Normal));
        }
        std::stable_sort(above.begin(), above.end(),
                         [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
        for (const AddedToken& a : above) {
            if (a.id != int64_t(v.tokens.size()))
                throw Error(t.path, "added_tokens",
                            "added token '" + a.content + "' has id " + std::to_string(a.id) +
                                ", expected " + std::to_string(v.tokens.size()) +
                                " (added ids follow the vocabulary without gaps)");
            v.tokens.push_back(a.content);
            v.types.push_back(int32_t(specialNames.count(a.content) ? GgufTokenType::Control
                                                                    : GgufTokenType::UserDefined));
        }
        v.scores = rankScores(v.tokens, mergesOf(t));
        for (size_t k = t.base.size(); k < v.tokens.size(); ++k)
            v.scores[k] = kDefaultScore; // added tokens: gguf-py's -1000
        padTo(v, modelVocabSize, t.path, configPath);
    } else {
        // get_vocab_base: ids 0..vocab_size-1 of the vocabulary and the added tokens; added
        // ones typed CONTROL (special, or looking special) or USER_DEFINED.
        if (byteFallback)
            throw Error(t.path, "model.byte_fallback",
                        "true with a '" + decoderType +
                            "' decoder: neither a sentencepiece-style BPE (Sequence decoder) nor "
                            "a byte-level one");
        if (decoderType != "ByteLevel")
            throw Error(t.path, "decoder.type",
                        "'" + decoderType +
                            "': a BPE without byte_fallback must be byte-level (ByteLevel "
                            "decoder) for llama.cpp's gpt2 tokenizer");
        const json normalizer = t.root.value("normalizer", json());
        // llama.cpp applies no normalizer to byte-level BPE; NFC (Qwen2) leaves composed text,
        // what real text is, unchanged.
        if (!normalizer.is_null() && hfjson::typeOf(normalizer, t.path, "normalizer") != "NFC")
            throw Error(t.path, "normalizer.type",
                        "'" + hfjson::typeOf(normalizer, t.path, "normalizer") +
                            "' is not applied by llama.cpp's byte-level BPE tokenizer");
        v.model = "gpt2";
        v.pre = llamaPreName(t);
        std::map<int64_t, const AddedToken*> addedById;
        for (const AddedToken& a : t.added)
            addedById[a.id] = &a;
        const int64_t count = std::max<int64_t>(
            int64_t(t.base.size()), addedById.empty() ? 0 : addedById.rbegin()->first + 1);
        for (int64_t i = 0; i < count; ++i) {
            const auto a = addedById.find(i);
            if (a == addedById.end() && i >= int64_t(t.base.size())) {
                v.tokens.push_back("[PAD" + std::to_string(i) + "]");
                v.types.push_back(int32_t(GgufTokenType::Unused));
            } else if (a == addedById.end()) {
                v.tokens.push_back(t.base[size_t(i)]);
                v.types.push_back(int32_t(GgufTokenType::Normal));
            } else if (a->second->special || looksSpecial(a->second->content)) {
                v.tokens.push_back(a->second->content);
                v.types.push_back(int32_t(GgufTokenType::Control));
            } else {
                std::string text = a->second->content; // "▁" pre-normalized to a space
                for (size_t p; (p = text.find("\xE2\x96\x81")) != std::string::npos;)
                    text.replace(p, 3, " ");
                v.tokens.push_back(text);
                v.types.push_back(int32_t(GgufTokenType::UserDefined));
            }
        }
        v.merges = mergesOf(t);
        padTo(v, modelVocabSize, t.path, configPath);
    }
    const SpecialVocabReader special(t, tokenizerConfig, config, v.tokens.size());
    v.specialIds = special.ids();
    v.addSpecial = special.adds();
    return v;
}

} // namespace qs
