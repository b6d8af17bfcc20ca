// The single scheme-traits table: one row per quantization data type. CLI help, GUI choices and
// QuantSpec validation are generated from it, and the Torch kernels dispatch on its `kernel`
// field, so adding a type starts (and mostly ends) here. No Torch in this header.
#pragma once

#include "quant/QuantTypes.h"

#include <string>
#include <string_view>
#include <vector>

namespace qs::quant {

// Kernel family that implements quantize / dequantize / fake-quantize for a row (enum dispatch
// in Quantize.cpp over IntKernels.cpp, FloatKernels.cpp and BlockKernels.cpp; the header stays
// free of Torch so views can read the table).
enum class Kernel : uint8_t { IntAffine, MiniFloat, MxBlock, NvFp4, Mx6, Bfp16, Cast };

// Layout that pack()/unpack() produce for a row's codes (Packing.h).
enum class PackFormat : uint8_t {
    None,       // codes stored one per element (int2 is not packed by Quark either)
    Int3Bytes,  // 8 values in 3 bytes, little-endian 24-bit (Quark Pack_3_bits)
    Int4Words,  // 8 nibbles per int32, "reorder" or "order" (Quark Pack_4_bits)
    Bytes,      // one byte per element (int8/uint8, FP8 codes)
    Fp4Nibbles, // two E2M1 codes per byte, low nibble = even element
    Fp6Bytes,   // 4 values in 3 bytes, little-endian 24-bit (Quark Pack_fp6)
};

constexpr unsigned bit(Granularity g) {
    return 1u << static_cast<unsigned>(g);
}
constexpr unsigned bit(ScaleType s) {
    return 1u << static_cast<unsigned>(s);
}

struct TypeTraits {
    DataType type;
    const char* name;        // canonical CLI/recipe name, e.g. "int4", "mxfp4"
    const char* description; // one line for help texts and tooltips
    int bits;                // bits per stored element (without shared scales)
    double bitsPerElement;   // including amortised shared scales (MX: +8/32, NVFP4: +8/16)
    Encoding encoding;
    Kernel kernel;
    // Integer rows: code range. Float rows: -floatMax, +floatMax. Block rows: element range.
    double qmin;
    double qmax;
    double floatMax;        // largest finite magnitude of the element format (0 for integers)
    int ebits;              // element exponent bits (0 for integers)
    int mbits;              // element mantissa bits (integers: value bits, as in Quark)
    int emax;               // Quark get_dtype_params emax, used for the E8M0 shared exponent
    DataType element;       // element format of MX/NVFP4 rows, the row itself otherwise
    int blockSize;          // fixed block/group size (32 MX, 16 NVFP4, 8 BFP16, 32 MX6), 0 = free
    unsigned granularities; // bit(Granularity) mask of what QuantSpec may choose
    unsigned scaleTypes;    // bit(ScaleType) mask
    bool allowsAsymmetric;  // integers only
    PackFormat pack;
    const char* quarkDtype; // Quark Dtype name written to "dtype" (MX rows: element type)
};

const std::vector<TypeTraits>& allTypeTraits();
const TypeTraits& traits(DataType type);
std::string dataTypeName(DataType type);
// Accepts the canonical names and a few aliases ("fp4_e2m1", "bfloat16", "float16").
std::optional<DataType> dataTypeFromName(std::string_view name);
std::vector<std::string> dataTypeNames();

bool isInteger(DataType type);   // rows with Encoding::Int
bool isMiniFloat(DataType type); // FP8/FP6/FP4 element formats
bool hasFixedBlock(DataType type);
// Families of the exporters' storage formats (int32-packed nibbles, bytes, F8 bytes).
bool isInt4(DataType type); // int4, uint4
bool isInt8(DataType type); // int8, uint8
bool isFp8(DataType type);  // fp8_e4m3, fp8_e5m2

// Multi-line table for `--help` and the documentation: name, bits, range, block, granularities.
std::string typeHelpText();

} // namespace qs::quant
