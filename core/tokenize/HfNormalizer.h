#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace qs {

// The tokenizer.json "normalizer" subset used by BPE language models: Sequence, Prepend,
// Replace (literal pattern), NFC/NFD/NFKC/NFKD, Lowercase, Strip. Anything else is rejected when
// loading, so a tokenizer is never silently applied with a step missing.
class HfNormalizer {
public:
    // `node` may be null (identity). Throws qs::Error naming `source` and the field.
    static HfNormalizer fromJson(const nlohmann::json& node, const std::string& source,
                                 const std::string& field = "normalizer");

    bool isIdentity() const { return m_steps.empty(); }
    std::string apply(std::string text) const;

private:
    enum class Kind { Prepend, Replace, Nfc, Nfd, Nfkc, Nfkd, Lowercase, Strip };
    struct Step {
        Kind kind;
        std::string a; // Prepend: prefix; Replace: pattern
        std::string b; // Replace: content
        bool left = false;
        bool right = false;
    };
    void parse(const nlohmann::json& node, const std::string& source, const std::string& field);

    std::vector<Step> m_steps;
};

} // namespace qs
