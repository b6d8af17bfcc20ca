#pragma once

#include "tokenize/PreTokenPattern.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <string>
#include <vector>

namespace qs {

// One piece of text on its way to the BPE model.
struct PreToken {
    std::string text;
    bool atInputStart = false; // starts at offset 0 of the original input (Metaspace "first")
};

// The tokenizer.json "pre_tokenizer" subset of BPE language models: ByteLevel (GPT-2), Split with
// the GPT-2 / Llama-3 / Qwen2 regexes or a literal string, Metaspace, Digits, Sequence.
class HfPreTokenizer {
public:
    enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

    // `node` may be null (no pre-tokenization). Throws qs::Error naming `source` and the field.
    static HfPreTokenizer fromJson(const nlohmann::json& node, const std::string& source,
                                   const std::string& field = "pre_tokenizer");
    // GPT-2's: ByteLevel(add_prefix_space=false, use_regex=true).
    static HfPreTokenizer gpt2ByteLevel();

    std::vector<PreToken> apply(std::vector<PreToken> pieces) const;
    bool isByteLevel() const { return m_byteLevel; }

    // GPT-2's reversible byte <-> printable character map (bytes_to_unicode).
    static const std::array<std::string, 256>& byteToUnicode();
    // The byte a byte-level character stands for, or -1.
    static int unicodeToByte(char32_t c);

private:
    enum class Kind { ByteLevel, SplitRegex, SplitString, Metaspace, Digits };
    enum class Prepend { Always, First, Never };
    struct Step {
        explicit Step(Kind k) : kind(k) {}
        Kind kind;
        bool addPrefixSpace = false;
        bool useRegex = true;
        PreTokenPattern pattern = PreTokenPattern::Gpt2;
        std::string literal; // SplitString pattern, Metaspace replacement
        Behavior behavior = Behavior::Isolated;
        bool invert = false;
        Prepend prepend = Prepend::Always;
        bool split = true; // Metaspace split; Digits individual_digits
    };
    void parse(const nlohmann::json& node, const std::string& source, const std::string& field);
    void applyStep(const Step& step, PreToken piece, std::vector<PreToken>& out) const;

    std::vector<Step> m_steps;
    bool m_byteLevel = false;
};

} // namespace qs
