#pragma once

#include "io/GgufTensorNames.h" // hfNameOfGgufTensor: the names mapped back

#include <string>

namespace qs {

// Opening a GGUF file (llama.cpp's format) as a model. Like a real-quantized Quark export
// (io/QuarkFolder.h), the file is converted once into a Hugging Face checkpoint folder in the
// cache, keyed by the file's absolute path, size and modification time, and every command then
// opens that folder like any checkpoint: config.json from the <arch>.* metadata, model.safetensors
// with every tensor dequantized to fp32 (ggmlDequantizeRow) under its Hugging Face name (a stacked
// experts tensor split into one tensor per expert) and, for q/k of an architecture that permutes
// them, with llama.cpp's RoPE row permutation undone, and the tokenizer (io/GgufTokenizer.h). The
// folder is written under a temporary name and renamed into place: a failed conversion leaves
// nothing behind. The architectures of io/GgufArchitecture.h ("llama", "qwen2moe"); others are
// refused by name.

// Whether `path` is a regular file whose name ends in .gguf (case-insensitive).
bool isGgufPath(const std::string& path);

// The folder a model path computes with: `path` itself unless it is a GGUF file, whose cache
// folder is returned (converted on first use). qs::Error names the file, field and reason.
std::string resolveModelFolder(const std::string& path);

// Converts GGUF file `ggufPath` into a checkpoint folder at `outDir` (which must not exist;
// written to a temporary folder beside it and renamed).
void writeGgufAsCheckpoint(const std::string& ggufPath, const std::string& outDir);

} // namespace qs
