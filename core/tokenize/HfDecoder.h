#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <utility>
#include <vector>

namespace qs {

// The tokenizer.json "decoder" subset of BPE language models: ByteLevel, Metaspace, and the
// sentencepiece-style Sequence of Replace, ByteFallback, Fuse and Strip. Each step maps a list of
// token strings to a new list, as in Hugging Face, and the result is their concatenation.
class HfDecoder {
public:
    // `node` may be null (tokens joined with spaces, as Hugging Face does without a decoder).
    static HfDecoder fromJson(const nlohmann::json& node, const std::string& source,
                              const std::string& field = "decoder");
    static HfDecoder byteLevel();

    std::string decode(std::vector<std::string> tokens) const;

private:
    enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
    struct Step {
        Step(Kind k, std::string first = {}, std::string second = {})
            : kind(k), a(std::move(first)), b(std::move(second)) {}
        Kind kind;
        std::string a; // Replace pattern, Strip content, Metaspace replacement
        std::string b; // Replace content
        size_t start = 0;
        size_t stop = 0;
        bool prependNever = false; // Metaspace
    };
    void parse(const nlohmann::json& node, const std::string& source, const std::string& field);
    static std::vector<std::string> applyStep(const Step& step, std::vector<std::string> tokens);

    std::vector<Step> m_steps;
    bool m_none = true;
};

} // namespace qs
