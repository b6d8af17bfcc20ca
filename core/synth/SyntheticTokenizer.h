#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace qs {

// A real sentencepiece-style BPE tokenizer (byte fallback, "▁" word prefix, merges by rank) in
// Hugging Face tokenizer.json form, trained deterministically on a built-in English text. Ids:
// 0 <unk>, 1 <s>, 2 </s>, 3..258 the bytes <0x00>..<0xFF>, then characters and merges up to
// `vocabSize` or until no pair repeats. Synthetic checkpoints ship it so every tool path
// (tokenize, evaluate, generate) runs on them.
nlohmann::json buildSyntheticTokenizerJson(int64_t vocabSize);

} // namespace qs
