#pragma once

#include <cstdint>
#include <string>

namespace qs {

// What a perplexity evaluation runs on (docs/evaluation.md): the one description used by
// recipes, the CLI, the GUI's Evaluate panel and the engine. Torch-free value type.
struct EvaluationSpec {
    std::string dataPath;   // UTF-8 text, tokenized once with BOS
    int64_t seqLen = 0;     // window length; 0 = min(512, the model's max positions)
    int64_t maxWindows = 0; // evaluate only the first N windows; 0 = all
    bool operator==(const EvaluationSpec& o) const {
        return dataPath == o.dataPath && seqLen == o.seqLen && maxWindows == o.maxWindows;
    }
};

} // namespace qs
