#include "quant/TypeTraits.h"

#include <cstdio>
#include <stdexcept>

namespace qs::quant {

namespace {

using G = Granularity;
using S = ScaleType;

constexpr unsigned kIntGran =
    bit(G::PerTensor) | bit(G::PerChannel) | bit(G::PerGroup) | bit(G::PerToken);
constexpr unsigned kGroupOnly = bit(G::PerGroup);
constexpr unsigned kFloatScales = bit(S::Float) | bit(S::Float32);

// Ranges and exponent parameters follow Quark's calculate_qmin_qmax / get_dtype_params
// (quark/torch/quantization/utils.py); float maxima follow the OCP 8-bit and MX v1.0 specs.
std::vector<TypeTraits> makeTable() {
    std::vector<TypeTraits> t;
    auto intRow = [&](DataType type, const char* name, const char* desc, int bits, double qmin,
                      double qmax, unsigned scales, PackFormat pack) {
        t.push_back({type,
                     name,
                     desc,
                     bits,
                     double(bits),
                     Encoding::Int,
                     Kernel::IntAffine,
                     qmin,
                     qmax,
                     0.0,
                     0,
                     bits,
                     0,
                     type,
                     0,
                     kIntGran,
                     scales,
                     true,
                     pack,
                     name});
    };
    intRow(DataType::Int2, "int2", "signed 2-bit integer [-2, 1]", 2, -2, 1, kFloatScales,
           PackFormat::None);
    intRow(DataType::Int3, "int3", "signed 3-bit integer [-4, 3]", 3, -4, 3, kFloatScales,
           PackFormat::Int3Bytes);
    intRow(DataType::Int4, "int4", "signed 4-bit integer [-8, 7]", 4, -8, 7, kFloatScales,
           PackFormat::Int4Words);
    intRow(DataType::Uint4, "uint4", "unsigned 4-bit integer [0, 15]", 4, 0, 15, kFloatScales,
           PackFormat::Int4Words);
    intRow(DataType::Int8, "int8", "signed 8-bit integer [-128, 127]", 8, -128, 127,
           kFloatScales | bit(S::Pow2), PackFormat::Bytes);
    intRow(DataType::Uint8, "uint8", "unsigned 8-bit integer [0, 255]", 8, 0, 255,
           kFloatScales | bit(S::Pow2), PackFormat::Bytes);

    auto floatRow = [&](DataType type, const char* name, const char* desc, int bits, double fmax,
                        int ebits, int mbits, int emax, unsigned gran, PackFormat pack) {
        t.push_back({type,
                     name,
                     desc,
                     bits,
                     double(bits),
                     Encoding::Float,
                     Kernel::MiniFloat,
                     -fmax,
                     fmax,
                     fmax,
                     ebits,
                     mbits,
                     emax,
                     type,
                     0,
                     gran,
                     kFloatScales | bit(S::E8M0),
                     false,
                     pack,
                     name});
    };
    floatRow(DataType::Fp8E4M3, "fp8_e4m3", "OCP FP8 E4M3 (fn: max 448, no inf)", 8, 448.0, 4, 3, 8,
             kIntGran, PackFormat::Bytes);
    floatRow(DataType::Fp8E5M2, "fp8_e5m2", "OCP FP8 E5M2 (max 57344)", 8, 57344.0, 5, 2, 15,
             kIntGran, PackFormat::Bytes);
    floatRow(DataType::Fp6E3M2, "fp6_e3m2", "OCP FP6 E3M2 (max 28)", 6, 28.0, 3, 2, 4, kGroupOnly,
             PackFormat::Fp6Bytes);
    floatRow(DataType::Fp6E2M3, "fp6_e2m3", "OCP FP6 E2M3 (max 7.5)", 6, 7.5, 2, 3, 2, kGroupOnly,
             PackFormat::Fp6Bytes);
    floatRow(DataType::Fp4, "fp4", "OCP FP4 E2M1 (max 6)", 4, 6.0, 2, 1, 2, kGroupOnly,
             PackFormat::Fp4Nibbles);

    auto mxRow = [&](DataType type, const char* name, const char* desc, DataType element, int bits,
                     double qmin, double qmax, double fmax, int ebits, int mbits, int emax,
                     PackFormat pack, const char* quark) {
        t.push_back({type,
                     name,
                     desc,
                     bits,
                     bits + 8.0 / 32.0,
                     Encoding::Mx,
                     Kernel::MxBlock,
                     qmin,
                     qmax,
                     fmax,
                     ebits,
                     mbits,
                     emax,
                     element,
                     32,
                     kGroupOnly,
                     bit(S::E8M0),
                     false,
                     pack,
                     quark});
    };
    mxRow(DataType::MxFp4, "mxfp4", "OCP MX FP4 E2M1, 32 per E8M0 scale", DataType::Fp4, 4, -6, 6,
          6, 2, 1, 2, PackFormat::Fp4Nibbles, "fp4");
    mxRow(DataType::MxFp6E3M2, "mxfp6_e3m2", "OCP MX FP6 E3M2, 32 per E8M0 scale",
          DataType::Fp6E3M2, 6, -28, 28, 28, 3, 2, 4, PackFormat::Fp6Bytes, "fp6_e3m2");
    mxRow(DataType::MxFp6E2M3, "mxfp6_e2m3", "OCP MX FP6 E2M3, 32 per E8M0 scale",
          DataType::Fp6E2M3, 6, -7.5, 7.5, 7.5, 2, 3, 2, PackFormat::Fp6Bytes, "fp6_e2m3");
    mxRow(DataType::MxFp8E4M3, "mxfp8_e4m3", "OCP MX FP8 E4M3, 32 per E8M0 scale",
          DataType::Fp8E4M3, 8, -448, 448, 448, 4, 3, 8, PackFormat::Bytes, "fp8_e4m3");
    mxRow(DataType::MxFp8E5M2, "mxfp8_e5m2", "OCP MX FP8 E5M2, 32 per E8M0 scale",
          DataType::Fp8E5M2, 8, -57344, 57344, 57344, 5, 2, 15, PackFormat::Bytes, "fp8_e5m2");
    // MX INT8 elements are 1.6 fixed point: code/64, codes saturate at +-127 (Quark
    // fake_quantize_mx).
    mxRow(DataType::MxInt8, "mxint8", "OCP MX INT8 (code/64), 32 per E8M0 scale", DataType::Int8, 8,
          -127, 127, 0, 0, 8, 0, PackFormat::Bytes, "mx");

    t.push_back({DataType::NvFp4,
                 "nvfp4",
                 "NVFP4: FP4 E2M1, 16 per FP8 E4M3 scale, FP32 tensor scale",
                 4,
                 4.0 + 8.0 / 16.0,
                 Encoding::NvFp4,
                 Kernel::NvFp4,
                 -6,
                 6,
                 6,
                 2,
                 1,
                 2,
                 DataType::Fp4,
                 16,
                 kGroupOnly,
                 bit(S::E4M3),
                 false,
                 PackFormat::Fp4Nibbles,
                 "fp4"});
    t.push_back({DataType::Mx6,
                 "mx6",
                 "Quark MX6: 32-element blocks, shared exponent + prime bit",
                 6,
                 6.0,
                 Encoding::BlockFloat,
                 Kernel::Mx6,
                 0,
                 0,
                 0,
                 0,
                 0,
                 0,
                 DataType::Mx6,
                 32,
                 kGroupOnly,
                 bit(S::Pow2),
                 false,
                 PackFormat::None,
                 "mx6"});
    t.push_back({DataType::Bfp16,
                 "bfp16",
                 "Quark BFP16: int8 mantissas, 8 per shared exponent",
                 8,
                 9.0,
                 Encoding::BlockFloat,
                 Kernel::Bfp16,
                 -128,
                 127,
                 0,
                 0,
                 0,
                 0,
                 DataType::Bfp16,
                 8,
                 kGroupOnly,
                 bit(S::Pow2),
                 false,
                 PackFormat::None,
                 "bfp16"});
    t.push_back({DataType::BFloat16,
                 "bf16",
                 "bfloat16 pass-through (cast)",
                 16,
                 16.0,
                 Encoding::PassThrough,
                 Kernel::Cast,
                 0,
                 0,
                 0,
                 8,
                 7,
                 127,
                 DataType::BFloat16,
                 0,
                 bit(G::PerTensor),
                 bit(S::Float),
                 false,
                 PackFormat::None,
                 "bfloat16"});
    t.push_back({DataType::Float16,
                 "fp16",
                 "float16 pass-through (cast)",
                 16,
                 16.0,
                 Encoding::PassThrough,
                 Kernel::Cast,
                 0,
                 0,
                 0,
                 5,
                 10,
                 15,
                 DataType::Float16,
                 0,
                 bit(G::PerTensor),
                 bit(S::Float),
                 false,
                 PackFormat::None,
                 "float16"});
    return t;
}

} // namespace

const std::vector<TypeTraits>& allTypeTraits() {
    static const std::vector<TypeTraits> table = makeTable();
    return table;
}

const TypeTraits& traits(DataType type) {
    for (const auto& row : allTypeTraits())
        if (row.type == type)
            return row;
    throw std::logic_error("quant: data type missing from the traits table");
}

std::string dataTypeName(DataType type) {
    return traits(type).name;
}

std::optional<DataType> dataTypeFromName(std::string_view name) {
    for (const auto& row : allTypeTraits())
        if (name == row.name)
            return row.type;
    if (name == "fp4_e2m1")
        return DataType::Fp4;
    if (name == "bfloat16")
        return DataType::BFloat16;
    if (name == "float16")
        return DataType::Float16;
    return std::nullopt;
}

std::vector<std::string> dataTypeNames() {
    std::vector<std::string> out;
    for (const auto& row : allTypeTraits())
        out.emplace_back(row.name);
    return out;
}

bool isInt4(DataType type) {
    return type == DataType::Int4 || type == DataType::Uint4;
}
bool isInt8(DataType type) {
    return type == DataType::Int8 || type == DataType::Uint8;
}
bool isFp8(DataType type) {
    return type == DataType::Fp8E4M3 || type == DataType::Fp8E5M2;
}

bool isInteger(DataType type) {
    return traits(type).encoding == Encoding::Int;
}
bool isMiniFloat(DataType type) {
    return traits(type).encoding == Encoding::Float;
}
bool hasFixedBlock(DataType type) {
    return traits(type).blockSize > 0;
}

std::string typeHelpText() {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-11s %5s  %-22s %-6s %s\n", "type", "bits", "range", "block",
                  "granularities");
    out += line;
    for (const auto& row : allTypeTraits()) {
        char range[64];
        if (row.encoding == Encoding::PassThrough || row.kernel == Kernel::Mx6)
            std::snprintf(range, sizeof range, "-");
        else if (row.encoding == Encoding::Int || row.kernel == Kernel::Bfp16 ||
                 row.type == DataType::MxInt8)
            std::snprintf(range, sizeof range, "[%g, %g]", row.qmin, row.qmax);
        else
            std::snprintf(range, sizeof range, "+-%g", row.floatMax);
        std::string gran;
        for (int g = 0; g < 4; ++g) {
            if (row.granularities & (1u << g)) {
                if (!gran.empty())
                    gran += ",";
                gran += granularityName(static_cast<Granularity>(g));
            }
        }
        char block[16];
        std::snprintf(block, sizeof block, "%s",
                      row.blockSize ? std::to_string(row.blockSize).c_str() : "-");
        std::snprintf(line, sizeof line, "%-11s %5.2f  %-22s %-6s %s  %s\n", row.name,
                      row.bitsPerElement, range, block, gran.c_str(), row.description);
        out += line;
    }
    return out;
}

} // namespace qs::quant
