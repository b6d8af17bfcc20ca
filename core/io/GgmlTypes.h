// The ggml tensor types: one table of what each type id is (ggml.c's type_traits: name, block
// size, bytes per block), which llama.cpp file type a file of mostly that type declares, and how
// Quantscope decodes (to-float) and encodes (from-float) one row of it. The GGUF reader
// (GgufFile), the decoder (ggmlDequantizeRow), the GGUF writer (GgufExporter) and the list of
// types the GGUF export offers all read this table, so a new type is one row here plus its
// codec. Torch-free: the GGUF reader's fuzz target compiles it without Torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qs {

// The ggml types Quantscope writes or decodes, values as in ggml.h. Every other id ggml defines
// is still a row of the table (by name and size), so a file using one is refused by name
// instead of read as garbage. Q5_0 is written only as llama.cpp's fallback for Q4_K rows that
// are not a multiple of 256 long.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q8_0 = 8,
    Q4_K = 12,
    Q6_K = 14,
    BF16 = 30
};

// One row of `n` elements (a multiple of the type's block size) decoded to n floats, or n floats
// encoded into n / blockSize blocks (ggmlRowBytes(n, type) bytes).
using GgmlToFloat = void (*)(const uint8_t* blocks, int64_t n, float* out);
using GgmlFromFloat = void (*)(const float* x, int64_t n, uint8_t* out);

struct GgmlTypeTraits {
    const char* name = "unknown"; // ggml's name ("Q4_K"); "unknown" for an id ggml lacks
    int64_t blockSize = 0;        // elements per block; 0 for an unknown id
    uint64_t blockBytes = 0;
    // llama_ftype (general.file_type) of a file whose 2-D weights are mostly this type; -1 for
    // a type Quantscope does not write.
    int32_t fileType = -1;
    GgmlToFloat toFloat = nullptr;     // nullptr: not decoded
    GgmlFromFloat fromFloat = nullptr; // nullptr: not written
    // Position among the types the GGUF export offers by name (1 first); 0: not offered (Q5_0
    // is only a fallback, and types without fromFloat are never written).
    int offered = 0;
};

// The row of type id `type`: for an id ggml does not define (or removed), "unknown" with sizes 0.
const GgmlTypeTraits& ggmlTypeTraits(uint32_t type);
inline const GgmlTypeTraits& ggmlTypeTraits(GgmlType type) {
    return ggmlTypeTraits(uint32_t(type));
}
// "type 12 (Q4_K)".
std::string ggmlTypeLabel(uint32_t type);
// ggml's name in lower case ("q4_k"), as the GGUF export's option spells it.
std::string ggmlTypeName(GgmlType type);
// The types the GGUF export offers by name, in the order it lists them.
std::vector<GgmlType> ggmlOfferedTypes();
// An offered type by its lower-case name; nullopt for any other name.
std::optional<GgmlType> ggmlOfferedTypeByName(const std::string& lowerCaseName);
// Bytes of one row of n elements (n a multiple of the block size).
uint64_t ggmlRowBytes(int64_t n, GgmlType type);
// Whether a block is one element (F32, F16, BF16): the float types, which hold any row.
bool ggmlIsFloat(GgmlType type);
// ggml's reference quantizer of `type` for one row of n floats (GgmlQuantize.h, GgmlKQuants.h);
// qs::Error naming the type for one Quantscope does not write.
std::string ggmlQuantizeRow(const float* x, int64_t n, GgmlType type);

} // namespace qs
