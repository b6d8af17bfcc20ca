#include "synth/SyntheticTokenizer.h"

#include "util/Error.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace qs {

namespace {

// Training text: plain English so merges look like a real tokenizer's (" the", "ing", ...).
const char* kCorpus =
    "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day she found a shiny red ball under a big green tree. She was very "
    "happy and ran to show her mother. Her mother smiled and said that they should share the ball "
    "with everyone. The weights of a language model are stored as matrices, and quantization "
    "maps each value to a small set of levels. Outlier channels in the activations make the range "
    "large, so the scale grows and the other values lose precision. Engineers measure the error "
    "of every layer, find the one that ruins the accuracy, and change the recipe: they exclude the "
    "layer, pick a finer group size, or smooth the activations before rounding. The quick brown "
    "fox jumps over the lazy dog while the children are playing in the garden and singing songs. "
    "It was a sunny day, and the birds were singing in the trees. Tom wanted to build a big "
    "castle of sand near the sea, but the waves came and washed it away. He was sad, then he "
    "laughed and started again, because building is fun.";

const std::string kSpace = "\xE2\x96\x81"; // U+2581 "▁"

using Word = std::vector<std::string>;

} // namespace

nlohmann::json buildSyntheticTokenizerJson(int64_t vocabSize) {
    nlohmann::json vocab = nlohmann::json::object();
    int64_t next = 0;
    vocab["<unk>"] = next++;
    vocab["<s>"] = next++;
    vocab["</s>"] = next++;
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        vocab[piece] = next++;
    }
    // Words as in sentencepiece: "▁" replaces spaces and starts the text.
    std::map<Word, int64_t> words;
    std::set<std::string> chars{kSpace};
    std::string text = kCorpus;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(' ', pos);
        if (end == std::string::npos)
            end = text.size();
        Word w{kSpace};
        for (size_t i = pos; i < end; ++i) {
            w.emplace_back(1, text[i]);
            chars.insert(w.back());
        }
        ++words[w];
        pos = end + 1;
    }
    for (const std::string& c : chars)
        if (!vocab.contains(c))
            vocab[c] = next++;
    if (next > vocabSize)
        throw Error("synth", "vocab_size",
                    "must be at least " + std::to_string(next) + " for the built-in tokenizer");

    nlohmann::json merges = nlohmann::json::array();
    while (next < vocabSize) {
        std::map<std::pair<std::string, std::string>, int64_t> counts;
        for (const auto& [w, n] : words)
            for (size_t i = 0; i + 1 < w.size(); ++i)
                counts[{w[i], w[i + 1]}] += n;
        std::pair<std::string, std::string> best;
        int64_t bestCount = 1; // a pair seen once is not worth a token
        for (const auto& [pair, n] : counts)
            if (n > bestCount) { // std::map order breaks ties deterministically
                best = pair;
                bestCount = n;
            }
        if (bestCount < 2)
            break;
        const std::string merged = best.first + best.second;
        if (vocab.contains(merged))
            break;
        vocab[merged] = next++;
        merges.push_back(best.first + " " + best.second);
        std::map<Word, int64_t> updated;
        for (const auto& [w, n] : words) {
            Word out;
            for (size_t i = 0; i < w.size(); ++i) {
                if (i + 1 < w.size() && w[i] == best.first && w[i + 1] == best.second) {
                    out.push_back(merged);
                    ++i;
                } else {
                    out.push_back(w[i]);
                }
            }
            updated[out] += n;
        }
        words.swap(updated);
    }

    auto special = [](int id, const char* content) {
        return nlohmann::json{{"id", id},        {"content", content}, {"single_word", false},
                              {"lstrip", false}, {"rstrip", false},    {"normalized", false},
                              {"special", true}};
    };
    nlohmann::json j;
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")};
    j["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", kSpace}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}};
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}},
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
    j["decoder"] = {{"type", "Sequence"},
                    {"decoders",
                     {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
    j["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", "<unk>"},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", merges}};
    return j;
}

} // namespace qs
