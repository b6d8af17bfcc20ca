#include "tokenize/HfBpeTokenizer.h"

#include "tokenize/HfJson.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

namespace qs {

namespace {

using nlohmann::json;

json parseJson(const std::string& path) {
    return hfjson::parseDocument(hfjson::readBoundedFile(path), path);
}

std::unordered_map<std::string, int32_t> parseVocab(const json& vocab, const std::string& source,
                                                    const std::string& field) {
    if (!vocab.is_object())
        throw Error(source, field, "expected an object of token: id");
    if (vocab.size() > size_t(hfjson::kMaxTokenId) + 1)
        throw Error(source, field, "more tokens than ids allowed (kMaxTokenId)");
    std::unordered_map<std::string, int32_t> out;
    out.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer())
            throw Error(source, field, "id of token '" + it.key() + "' is not an integer");
        // Range-checked before the vocabulary sizes its id table by the largest id (an id of
        // 2^31 - 1 asked for a table of 2^31 strings, and overflowed computing its size).
        out.emplace(it.key(),
                    hfjson::tokenId(it.value(), source, field, "id of token '" + it.key() + "'"));
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> parseMerges(const json& merges,
                                                             const std::string& source) {
    if (!merges.is_array())
        throw Error(source, "model.merges", "expected an array");
    if (merges.size() > hfjson::kMaxMerges)
        throw Error(source, "model.merges",
                    "more than " + std::to_string(hfjson::kMaxMerges) + " merges (kMaxMerges)");
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& m = merges[i];
        const std::string field = "model.merges[" + std::to_string(i) + "]";
        if (m.is_string()) {
            // Legacy "a b" form: exactly one space.
            const std::string s = m.get<std::string>();
            const size_t space = s.find(' ');
            if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                throw Error(source, field, "expected \"left right\", got \"" + s + "\"");
            out.emplace_back(s.substr(0, space), s.substr(space + 1));
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        } else {
            throw Error(source, field, "expected \"left right\" or [left, right]");
        }
    }
    return out;
}

// The id of the special token a TemplateProcessing / Bert / Roberta post-processor puts first.
int32_t findTemplateBos(const json& node, const std::string& source,
                        const std::function<int32_t(const std::string&)>& lookup) {
    if (!node.is_object())
        return -1;
    // Checked accessors throughout: json::value() throws nlohmann's type_error on a wrong type.
    const std::string type = hfjson::stringOr(node, "type", "", source, "post_processor");
    if (type == "Sequence" && node.contains("processors") && node["processors"].is_array()) {
        for (const json& p : node["processors"]) {
            const int32_t id = findTemplateBos(p, source, lookup);
            if (id >= 0)
                return id;
        }
        return -1;
    }
    if ((type == "BertProcessing" || type == "RobertaProcessing") && node.contains("cls") &&
        node["cls"].is_array() && node["cls"].size() == 2 && node["cls"][1].is_number_integer())
        return hfjson::tokenId(node["cls"][1], source, "post_processor.cls", "BOS id");
    if (type != "TemplateProcessing" || !node.contains("single") || !node["single"].is_array() ||
        node["single"].empty())
        return -1;
    const json& first = node["single"][0];
    if (!first.is_object() || !first.contains("SpecialToken"))
        return -1;
    const std::string name =
        hfjson::stringOr(first["SpecialToken"], "id", "", source, "post_processor.single[0]");
    const json* specials = node.contains("special_tokens") ? &node["special_tokens"] : nullptr;
    if (specials && specials->is_object() && specials->contains(name) &&
        (*specials)[name].is_object() && (*specials)[name].contains("ids")) {
        const json& ids = (*specials)[name]["ids"];
        if (ids.is_array() && !ids.empty() && ids[0].is_number_integer())
            return hfjson::tokenId(ids[0], source, "post_processor.special_tokens", "BOS id");
    }
    const int32_t id = lookup(name);
    if (id < 0)
        throw Error(source, "post_processor.single[0]",
                    "special token '" + name + "' is not in the vocabulary");
    return id;
}

} // namespace

std::unique_ptr<HfBpeTokenizer> HfBpeTokenizer::fromTokenizerJson(const std::string& path) {
    const json root = parseJson(path);
    if (!root.is_object())
        throw Error(path, "", "expected a JSON object (a Hugging Face tokenizer.json)");
    const json& model = hfjson::member(root, "model", path, "");
    if (!model.is_object())
        throw Error(path, "model", "expected an object");
    const std::string type = model.contains("type")
                                 ? hfjson::typeOf(model, path, "model")
                                 : (model.contains("merges") ? "BPE" : "(missing)");
    if (type != "BPE")
        throw Error(path, "model.type",
                    "unsupported tokenizer model '" + type + "' (only BPE is implemented)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (!hfjson::stringOr(model, key, "", path, "model").empty())
            throw Error(path, std::string("model.") + key, "not supported");
    }
    // model.dropout is ignored: evaluation needs deterministic ids.

    auto tok = std::unique_ptr<HfBpeTokenizer>(new HfBpeTokenizer);
    tok->m_source = path;
    BpeModel::Options options;
    options.unkToken = hfjson::stringOr(model, "unk_token", "", path, "model");
    options.fuseUnk = hfjson::boolOr(model, "fuse_unk", false, path, "model");
    options.byteFallback = hfjson::boolOr(model, "byte_fallback", false, path, "model");
    options.ignoreMerges = hfjson::boolOr(model, "ignore_merges", false, path, "model");
    tok->m_model = std::make_unique<BpeModel>(
        parseVocab(hfjson::member(model, "vocab", path, "model"), path, "model.vocab"),
        parseMerges(hfjson::member(model, "merges", path, "model"), path), options, path);

    tok->m_normalizer = HfNormalizer::fromJson(root.value("normalizer", json()), path);
    tok->m_preTokenizer = HfPreTokenizer::fromJson(root.value("pre_tokenizer", json()), path);
    tok->m_decoder = HfDecoder::fromJson(root.value("decoder", json()), path);
    tok->m_byteLevel = tok->m_preTokenizer.isByteLevel();

    const json added = root.value("added_tokens", json::array());
    if (!added.is_array())
        throw Error(path, "added_tokens", "expected an array");
    if (added.size() > hfjson::kMaxAddedTokens)
        throw Error(path, "added_tokens",
                    "more than " + std::to_string(hfjson::kMaxAddedTokens) +
                        " added tokens (kMaxAddedTokens)");
    for (size_t i = 0; i < added.size(); ++i) {
        const json& a = added[i];
        const std::string field = "added_tokens[" + std::to_string(i) + "]";
        if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
            !a.contains("content") || !a["content"].is_string())
            throw Error(path, field, "expected an object with integer id and string content");
        AddedToken t;
        t.id = hfjson::tokenId(a["id"], path, field + ".id", "id");
        t.content = a["content"].get<std::string>();
        t.singleWord = hfjson::boolOr(a, "single_word", false, path, field);
        t.lstrip = hfjson::boolOr(a, "lstrip", false, path, field);
        t.rstrip = hfjson::boolOr(a, "rstrip", false, path, field);
        t.normalized = hfjson::boolOr(a, "normalized", true, path, field);
        t.special = hfjson::boolOr(a, "special", false, path, field);
        tok->addAddedToken(t);
    }

    tok->m_templateBosId =
        findTemplateBos(root.value("post_processor", json()), path,
                        [&tok](const std::string& name) { return tok->tokenToId(name); });
    tok->finishSetup();
    // The post-processor's id is used as is when a text is evaluated: it must name a token.
    if (tok->m_templateBosId >= 0 && !tok->m_addedById.count(tok->m_templateBosId) &&
        !tok->m_model->idToToken(tok->m_templateBosId))
        throw Error(path, "post_processor",
                    "BOS id " + std::to_string(tok->m_templateBosId) + " is not a token");
    return tok;
}

std::unique_ptr<HfBpeTokenizer> HfBpeTokenizer::fromVocabAndMerges(const std::string& vocabJsonPath,
                                                                   const std::string& mergesPath) {
    auto vocab = parseVocab(parseJson(vocabJsonPath), vocabJsonPath, "");
    std::vector<std::pair<std::string, std::string>> merges;
    std::istringstream lines(hfjson::readBoundedFile(mergesPath));
    std::string line;
    for (size_t lineNo = 1; std::getline(lines, line); ++lineNo) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty() || line.rfind("#version", 0) == 0)
            continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
            throw Error(mergesPath, "line " + std::to_string(lineNo),
                        "expected \"left right\", got \"" + line + "\"");
        merges.emplace_back(line.substr(0, space), line.substr(space + 1));
        if (merges.size() > hfjson::kMaxMerges)
            throw Error(mergesPath, "line " + std::to_string(lineNo),
                        "more than " + std::to_string(hfjson::kMaxMerges) + " merges (kMaxMerges)");
    }

    auto tok = std::unique_ptr<HfBpeTokenizer>(new HfBpeTokenizer);
    tok->m_source = vocabJsonPath;
    // Merge errors name merges.txt, the file the bad entry is in.
    tok->m_model =
        std::make_unique<BpeModel>(std::move(vocab), merges, BpeModel::Options{}, mergesPath);
    tok->m_preTokenizer = HfPreTokenizer::gpt2ByteLevel();
    tok->m_decoder = HfDecoder::byteLevel();
    tok->m_byteLevel = true;
    const int32_t eot = tok->m_model->tokenToId("<|endoftext|>");
    if (eot >= 0) {
        AddedToken t;
        t.content = "<|endoftext|>";
        t.id = eot;
        t.special = true;
        tok->addAddedToken(t);
    }
    tok->finishSetup();
    return tok;
}

void HfBpeTokenizer::addAddedToken(const AddedToken& token) {
    if (token.normalized && !m_normalizer.isIdentity())
        m_normalizedAdded.add(token);
    else
        m_rawAdded.add(token);
    m_addedById[token.id] = token;
    m_addedByContent[token.content] = token.id;
}

void HfBpeTokenizer::finishSetup() {
    int32_t maxId = m_model->maxId();
    for (const auto& [id, token] : m_addedById)
        maxId = std::max(maxId, id);
    m_vocabSize = maxId + 1;

    auto firstKnown = [this](std::initializer_list<const char*> names) {
        for (const char* n : names) {
            const int32_t id = tokenToId(n);
            if (id >= 0)
                return id;
        }
        return -1;
    };
    m_bosId = m_templateBosId >= 0
                  ? m_templateBosId
                  : firstKnown({"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>"});
    m_eosId = firstKnown({"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"});
}

int32_t HfBpeTokenizer::tokenToId(const std::string& token) const {
    const auto it = m_addedByContent.find(token);
    if (it != m_addedByContent.end())
        return it->second;
    return m_model->tokenToId(token);
}

std::string HfBpeTokenizer::idToToken(int32_t id) const {
    const auto it = m_addedById.find(id);
    if (it != m_addedById.end())
        return it->second.content;
    const std::string* t = m_model->idToToken(id);
    return t ? *t : std::string();
}

void HfBpeTokenizer::encodeText(const std::string& text, bool atInputStart,
                                std::vector<int32_t>& out) const {
    for (const PreToken& piece : m_preTokenizer.apply({PreToken{text, atInputStart}}))
        m_model->tokenize(piece.text, out);
}

std::vector<int32_t> HfBpeTokenizer::encode(const std::string& text) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 8);
    const auto rawSegments = m_rawAdded.empty()
                                 ? std::vector<AddedTokenMatcher::Segment>{{0, text.size(), -1}}
                                 : m_rawAdded.split(text);
    for (const auto& seg : rawSegments) {
        if (seg.tokenId >= 0) {
            out.push_back(seg.tokenId);
            continue;
        }
        const std::string normalized =
            m_normalizer.apply(text.substr(seg.begin, seg.end - seg.begin));
        if (m_normalizedAdded.empty()) {
            encodeText(normalized, seg.begin == 0, out);
            continue;
        }
        for (const auto& sub : m_normalizedAdded.split(normalized)) {
            if (sub.tokenId >= 0)
                out.push_back(sub.tokenId);
            else
                encodeText(normalized.substr(sub.begin, sub.end - sub.begin),
                           seg.begin == 0 && sub.begin == 0, out);
        }
    }
    return out;
}

std::string HfBpeTokenizer::decode(const std::vector<int32_t>& ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        const auto added = m_addedById.find(id);
        if (added != m_addedById.end()) {
            if (!added->second.special)
                tokens.push_back(added->second.content);
            continue;
        }
        if (const std::string* t = m_model->idToToken(id))
            tokens.push_back(*t);
    }
    return m_decoder.decode(std::move(tokens));
}

} // namespace qs
