#pragma once

#include <cstdint>

namespace qs {

// GGML tensor types Quantscope writes (GgufExporter) or reads (GgufFile, ggmlDequantizeRow);
// values as in ggml.h. Torch-free: the GGUF reader and its fuzz target include it alone.
// Every other ggml type id is still known to the reader by name and size (GgufFile.cpp), so a
// file using one is refused by name instead of as garbage. Q5_0 is written only as llama.cpp's
// fallback for Q4_K rows that are not a multiple of 256 long.
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

} // namespace qs
