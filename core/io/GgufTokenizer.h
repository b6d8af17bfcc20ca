#pragma once

#include "io/GgufFile.h"

#include <cstdint>
#include <string>

namespace qs {

// The special token ids a GGUF's tokenizer metadata names (-1 when it names none).
struct GgufSpecialIds {
    int64_t bos = -1;
    int64_t eos = -1;
};

// Writes the tokenizer of a GGUF's tokenizer.ggml.* metadata into folder `dir`, in the files
// TokenizerLoader reads:
//  - model "llama" (sentencepiece): tokenizer.model, a sentencepiece ModelProto serialised by
//    hand (pieces with scores and types; trainer_spec model_type BPE with byte fallback when the
//    vocabulary has byte pieces; Llama's normalizer spec: identity, dummy prefix, whitespace
//    escaped, extra whitespace kept, as llama.cpp tokenizes), plus tokenizer.json (the same
//    vocabulary as a Hugging Face BPE with byte fallback, merges derived from the scores as
//    transformers' LlamaConverter derives them) for a build without the sentencepiece plugin;
//  - model "gpt2" (byte-level BPE): pre-tokenizer "gpt-2", "llama-bpe" and "qwen2" as
//    tokenizer.json (GPT-2's ByteLevel, or Split with their regex then ByteLevel; Llama 3
//    ignoring merges, as llama.cpp does; CONTROL/USER_DEFINED tokens added tokens), absent or
//    "default" as vocab.json + merges.txt;
// plus tokenizer_config.json (bos/eos/unk tokens, add_bos_token as the GGUF says, default true
// for "llama" and "llama-bpe", as in llama.cpp). Anything else is refused by name (qs::Error naming
// `source` and the key).
GgufSpecialIds writeGgufTokenizer(const GgufHeader& header, const std::string& source,
                                  const std::string& dir);

// sentencepiece ModelProto bytes for the "llama" tokenizer of `header` (what tokenizer.model
// holds).
std::string sentencePieceModelProto(const GgufHeader& header, const std::string& source);

} // namespace qs
