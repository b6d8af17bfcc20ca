#include "io/GgufTokenizer.h"

#include "tokenize/PreTokenPattern.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Protobuf.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace qs {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// llama.cpp's token types equal sentencepiece's ModelProto.SentencePiece.Type values.
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;
// Deriving merges tries every split of every piece (quadratic in a piece's length); sentencepiece
// pieces are a few dozen bytes, so a longer one is a corrupt or hostile vocabulary.
constexpr size_t kMaxPieceBytes = 4096;

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
};

const GgufValue& arrayOf(const GgufHeader& h, const std::string& key, GgufValueType element,
                         const std::string& source) {
    const GgufValue* v = h.find(key);
    if (!v)
        throw Error(source, key, "missing required metadata key");
    if (v->type != GgufValueType::Array || v->elementType != element)
        throw Error(source, key,
                    std::string("must be an array of ") + ggufValueTypeName(element) + ", got " +
                        (v->type == GgufValueType::Array
                             ? std::string("an array of ") + ggufValueTypeName(v->elementType)
                             : std::string(ggufValueTypeName(v->type))));
    return *v;
}

Vocabulary readVocabulary(const GgufHeader& h, const std::string& source, bool needScores) {
    Vocabulary vocab;
    const GgufValue& tokens = arrayOf(h, "tokenizer.ggml.tokens", GgufValueType::String, source);
    if (tokens.array.empty())
        throw Error(source, "tokenizer.ggml.tokens", "empty vocabulary");
    for (const GgufValue& t : tokens.array) {
        if (needScores && t.s.size() > kMaxPieceBytes)
            throw Error(source,
                        "tokenizer.ggml.tokens[" + std::to_string(vocab.tokens.size()) + "]",
                        "piece of " + std::to_string(t.s.size()) + " bytes exceeds the limit of " +
                            std::to_string(kMaxPieceBytes) + " (kMaxPieceBytes)");
        vocab.tokens.push_back(t.s);
    }
    const size_t n = vocab.tokens.size();
    if (h.find("tokenizer.ggml.scores") || needScores) {
        const GgufValue& scores = arrayOf(h, "tokenizer.ggml.scores", GgufValueType::F32, source);
        if (scores.array.size() != n)
            throw Error(source, "tokenizer.ggml.scores",
                        std::to_string(scores.array.size()) + " scores for " + std::to_string(n) +
                            " tokens");
        for (const GgufValue& s : scores.array)
            vocab.scores.push_back(float(s.f));
    } else {
        vocab.scores.assign(n, 0.0f);
    }
    vocab.types.assign(n, kNormal);
    if (h.find("tokenizer.ggml.token_type")) {
        const GgufValue& types =
            arrayOf(h, "tokenizer.ggml.token_type", GgufValueType::I32, source);
        if (types.array.size() != n)
            throw Error(source, "tokenizer.ggml.token_type",
                        std::to_string(types.array.size()) + " types for " + std::to_string(n) +
                            " tokens");
        for (size_t k = 0; k < n; ++k) {
            const int64_t t = types.array[k].i;
            if (t < 0 || t > 6)
                throw Error(source, "tokenizer.ggml.token_type[" + std::to_string(k) + "]",
                            "unknown token type " + std::to_string(t));
            vocab.types[k] = t == 0 ? kNormal : int32_t(t); // 0: UNDEFINED
        }
    }
    return vocab;
}

// A special token id from metadata, -1 when absent or outside the vocabulary (llama.cpp writes
// 0xFFFFFFFF for "none").
int64_t tokenId(const GgufHeader& h, const std::string& key, size_t vocabSize,
                const std::string& source) {
    const GgufValue* v = h.find(key);
    if (!v)
        return -1;
    const uint64_t id = v->toUnsigned(source, key);
    return id < vocabSize ? int64_t(id) : -1;
}

// JSON text of a document holding GGUF strings, which may be any bytes: JSON needs UTF-8, so
// invalid text is refused by name (found by fuzz_gguf: nlohmann's dump threw type_error).
template <typename Json>
std::string dumpJson(const Json& j, int indent, const std::string& source,
                     const std::string& field) {
    try {
        return j.dump(indent) + "\n";
    } catch (const nlohmann::json::exception& e) {
        throw Error(source, field, std::string("not valid UTF-8 text: ") + e.what());
    }
}

bool flag(const GgufHeader& h, const std::string& key, bool fallback) {
    const GgufValue* v = h.find(key);
    return v && v->type == GgufValueType::Bool ? v->u != 0 : fallback;
}

// Code point boundaries of UTF-8 text (Python slices pieces by code point).
std::vector<size_t> codePointStarts(const std::string& s) {
    std::vector<size_t> starts;
    for (size_t i = 0; i < s.size(); ++i)
        if ((uint8_t(s[i]) & 0xc0) != 0x80)
            starts.push_back(i);
    return starts;
}

// transformers' SentencePieceExtractor.extract with scores: for every piece, each split into two
// pieces of the vocabulary (sorted by their ids), all ordered by the piece's score, highest
// first (a stable sort, as Python's).
std::vector<std::string> mergesFromScores(const Vocabulary& v) {
    std::unordered_map<std::string, size_t> id;
    for (size_t k = 0; k < v.tokens.size(); ++k)
        id.emplace(v.tokens[k], k);
    struct Merge {
        size_t left, right;
        float score;
    };
    std::vector<Merge> merges;
    for (size_t k = 0; k < v.tokens.size(); ++k) {
        const std::string& piece = v.tokens[k];
        std::vector<Merge> local;
        const std::vector<size_t> starts = codePointStarts(piece);
        for (size_t s = 1; s < starts.size(); ++s) {
            const auto l = id.find(piece.substr(0, starts[s]));
            const auto r = id.find(piece.substr(starts[s]));
            if (l != id.end() && r != id.end())
                local.push_back({l->second, r->second, v.scores[k]});
        }
        std::stable_sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
            return a.left != b.left ? a.left < b.left : a.right < b.right;
        });
        merges.insert(merges.end(), local.begin(), local.end());
    }
    std::stable_sort(merges.begin(), merges.end(),
                     [](const Merge& a, const Merge& b) { return a.score > b.score; });
    std::vector<std::string> out;
    out.reserve(merges.size());
    for (const Merge& m : merges)
        out.push_back(v.tokens[m.left] + " " + v.tokens[m.right]);
    return out;
}

// tokenizer.json as transformers' LlamaConverter writes it (legacy Llama 2 tokenizer).
std::string llamaTokenizerJson(const Vocabulary& v, int64_t unk, int64_t bos, bool addBos,
                               bool addSpacePrefix, const std::string& source) {
    ordered_json added = ordered_json::array();
    for (size_t k = 0; k < v.tokens.size(); ++k)
        if (v.types[k] == kControl || v.types[k] == kUnknown || v.types[k] == 4)
            added.push_back({{"id", k},
                             {"content", v.tokens[k]},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", v.types[k] != 4}});
    ordered_json normalizers = ordered_json::array();
    if (addSpacePrefix)
        normalizers.push_back({{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}});
    normalizers.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}});
    ordered_json vocab = ordered_json::object();
    for (size_t k = 0; k < v.tokens.size(); ++k)
        vocab[v.tokens[k]] = k;
    ordered_json t;
    t["version"] = "1.0";
    t["truncation"] = nullptr;
    t["padding"] = nullptr;
    t["added_tokens"] = added;
    t["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    t["pre_tokenizer"] = nullptr;
    if (addBos && bos >= 0) {
        const std::string b = v.tokens[size_t(bos)];
        t["post_processor"] = {
            {"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair",
             {{{"SpecialToken", {{"id", b}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", b}, {"type_id", 1}}}},
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{b, {{"id", b}, {"ids", {bos}}, {"tokens", {b}}}}}}};
    } else {
        t["post_processor"] = nullptr;
    }
    ordered_json decoders = ordered_json::array();
    decoders.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", "\xe2\x96\x81"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (addSpacePrefix)
        decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    t["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    t["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", unk >= 0 ? json(v.tokens[size_t(unk)]) : json(nullptr)},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", mergesFromScores(v)}};
    return dumpJson(t, 1, source, "tokenizer.ggml.tokens");
}

// The split regex of a byte-level BPE's tokenizer.ggml.pre, for a tokenizer.json: GPT-2's,
// Llama 3's or Qwen2's for llama.cpp's names of them ("gpt-2", "llama-bpe", "qwen2"); none for
// the names read as vocab.json + merges.txt (absent, "default", "gpt2" as older files have it);
// any other name is refused.
std::optional<PreTokenPattern> byteLevelSplit(const GgufHeader& h, const std::string& source) {
    const GgufValue* pre = h.find("tokenizer.ggml.pre");
    if (!pre)
        return std::nullopt;
    if (pre->type != GgufValueType::String)
        throw Error(source, "tokenizer.ggml.pre", "must be a string");
    if (pre->s == "default" || pre->s == "gpt2")
        return std::nullopt;
    if (pre->s == "gpt-2")
        return PreTokenPattern::Gpt2;
    if (pre->s == "llama-bpe" || pre->s == "llama3" || pre->s == "llama-v3")
        return PreTokenPattern::Llama3;
    if (pre->s == "qwen2")
        return PreTokenPattern::Qwen2;
    throw Error(source, "tokenizer.ggml.pre",
                "pre-tokenizer '" + pre->s +
                    "' is not read (default as vocab.json + merges.txt; gpt-2, llama-bpe and "
                    "qwen2 as tokenizer.json)");
}

// tokenizer.json of a byte-level BPE split by `pattern`, as those models ship it: GPT-2's
// ByteLevel with its regex, or Split(regex, Isolated) then ByteLevel without one (Llama 3,
// Qwen2); Llama 3 ignores merges (a piece in the vocabulary is one token), as llama.cpp does for
// it. CONTROL and USER_DEFINED tokens become added tokens (special for CONTROL), which the text
// is split at first, as llama.cpp splits it.
std::string byteLevelTokenizerJson(const Vocabulary& v, const GgufValue& merges,
                                   PreTokenPattern pattern, const std::string& source) {
    ordered_json added = ordered_json::array();
    for (size_t k = 0; k < v.tokens.size(); ++k)
        if (v.types[k] == kControl || v.types[k] == 4)
            added.push_back({{"id", k},
                             {"content", v.tokens[k]},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", v.types[k] == kControl}});
    ordered_json vocab = ordered_json::object();
    for (size_t k = 0; k < v.tokens.size(); ++k)
        vocab[v.tokens[k]] = k;
    ordered_json mergeList = ordered_json::array();
    for (const GgufValue& m : merges.array)
        mergeList.push_back(m.s);
    ordered_json t;
    t["version"] = "1.0";
    t["truncation"] = nullptr;
    t["padding"] = nullptr;
    t["added_tokens"] = added;
    t["normalizer"] = nullptr;
    if (pattern == PreTokenPattern::Gpt2)
        t["pre_tokenizer"] = {{"type", "ByteLevel"},
                              {"add_prefix_space", false},
                              {"trim_offsets", true},
                              {"use_regex", true}};
    else
        t["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers",
                               {{{"type", "Split"},
                                 {"pattern", {{"Regex", preTokenPatternRegex(pattern)}}},
                                 {"behavior", "Isolated"},
                                 {"invert", false}},
                                {{"type", "ByteLevel"},
                                 {"add_prefix_space", false},
                                 {"trim_offsets", true},
                                 {"use_regex", false}}}}};
    t["post_processor"] = nullptr;
    t["decoder"] = {{"type", "ByteLevel"},
                    {"add_prefix_space", true},
                    {"trim_offsets", true},
                    {"use_regex", true}};
    t["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"ignore_merges", pattern == PreTokenPattern::Llama3},
                  {"vocab", vocab},
                  {"merges", mergeList}};
    return dumpJson(t, 1, source, "tokenizer.ggml.tokens");
}

} // namespace

std::string sentencePieceModelProto(const GgufHeader& h, const std::string& source) {
    const Vocabulary v = readVocabulary(h, source, true);
    const size_t n = v.tokens.size();
    ProtoWriter model;
    bool hasBytes = false;
    for (size_t k = 0; k < n; ++k) {
        ProtoWriter piece; // ModelProto.SentencePiece
        piece.bytes(1, v.tokens[k]);
        uint32_t bits;
        std::memcpy(&bits, &v.scores[k], 4);
        piece.fixed32(2, bits);
        if (v.types[k] != kNormal)
            piece.varint(3, uint64_t(v.types[k]));
        hasBytes = hasBytes || v.types[k] == kByte;
        model.message(1, piece);
    }
    // int32 fields: a negative value is a 10-byte varint of its 64-bit two's complement.
    auto int32Field = [](ProtoWriter& w, uint32_t field, int64_t value) {
        w.varint(field, uint64_t(value));
    };
    ProtoWriter trainer;  // TrainerSpec
    trainer.varint(3, 2); // model_type: BPE (llama.cpp's "llama" tokenizer merges by score)
    trainer.varint(4, n); // vocab_size
    if (hasBytes)
        trainer.varint(35, 1); // byte_fallback
    int32Field(trainer, 40, tokenId(h, "tokenizer.ggml.unknown_token_id", n, source));
    int32Field(trainer, 41, tokenId(h, "tokenizer.ggml.bos_token_id", n, source));
    int32Field(trainer, 42, tokenId(h, "tokenizer.ggml.eos_token_id", n, source));
    int32Field(trainer, 43, tokenId(h, "tokenizer.ggml.padding_token_id", n, source));
    model.message(2, trainer);
    ProtoWriter normalizer; // NormalizerSpec, as Llama's tokenizer.model has it
    normalizer.bytes(1, "identity");
    normalizer.varint(3, flag(h, "tokenizer.ggml.add_space_prefix", true) ? 1 : 0);
    normalizer.varint(4, 0); // remove_extra_whitespaces: off (llama.cpp keeps them)
    normalizer.varint(5, 1); // escape_whitespaces
    model.message(3, normalizer);
    return model.data();
}

GgufSpecialIds writeGgufTokenizer(const GgufHeader& h, const std::string& source,
                                  const std::string& dir) {
    const GgufValue* model = h.find("tokenizer.ggml.model");
    if (!model)
        throw Error(source, "tokenizer.ggml.model", "missing: the GGUF carries no tokenizer");
    if (model->type != GgufValueType::String)
        throw Error(source, "tokenizer.ggml.model", "must be a string");
    const bool sentencePiece = model->s == "llama";
    if (!sentencePiece && model->s != "gpt2")
        throw Error(source, "tokenizer.ggml.model",
                    "tokenizer '" + model->s + "' is not read (llama and gpt2 are)");
    const Vocabulary v = readVocabulary(h, source, sentencePiece);
    const size_t n = v.tokens.size();
    GgufSpecialIds ids;
    ids.bos = tokenId(h, "tokenizer.ggml.bos_token_id", n, source);
    ids.eos = tokenId(h, "tokenizer.ggml.eos_token_id", n, source);
    const int64_t unk = tokenId(h, "tokenizer.ggml.unknown_token_id", n, source);
    const std::optional<PreTokenPattern> split =
        sentencePiece ? std::nullopt : byteLevelSplit(h, source);
    // llama.cpp's defaults: BOS for sentencepiece and Llama 3's byte-level BPE.
    const bool addBos =
        flag(h, "tokenizer.ggml.add_bos_token", sentencePiece || split == PreTokenPattern::Llama3);

    if (sentencePiece) {
        writeFileAtomically(dir + "/tokenizer.model", sentencePieceModelProto(h, source));
        writeFileAtomically(dir + "/tokenizer.json",
                            llamaTokenizerJson(v, unk, ids.bos, addBos,
                                               flag(h, "tokenizer.ggml.add_space_prefix", true),
                                               source));
    } else {
        const GgufValue& merges =
            arrayOf(h, "tokenizer.ggml.merges", GgufValueType::String, source);
        if (split) {
            writeFileAtomically(dir + "/tokenizer.json",
                                byteLevelTokenizerJson(v, merges, *split, source));
        } else {
            ordered_json vocab = ordered_json::object();
            for (size_t k = 0; k < n; ++k)
                vocab[v.tokens[k]] = k;
            std::string text = "#version: 0.2\n";
            for (const GgufValue& m : merges.array)
                text += m.s + "\n";
            writeFileAtomically(dir + "/vocab.json",
                                dumpJson(vocab, -1, source, "tokenizer.ggml.tokens"));
            writeFileAtomically(dir + "/merges.txt", text);
        }
    }
    json config = json::object();
    auto name = [&](int64_t id) { return id >= 0 ? json(v.tokens[size_t(id)]) : json(nullptr); };
    config["bos_token"] = name(ids.bos);
    config["eos_token"] = name(ids.eos);
    config["unk_token"] = name(unk);
    config["add_bos_token"] = addBos;
    config["add_eos_token"] = flag(h, "tokenizer.ggml.add_eos_token", false);
    writeFileAtomically(dir + "/tokenizer_config.json",
                        dumpJson(config, 2, source, "tokenizer.ggml.tokens"));
    return ids;
}

} // namespace qs
