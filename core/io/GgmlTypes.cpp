#include "io/GgmlTypes.h"

#include "io/GgmlDequantize.h"
#include "io/GgmlKQuants.h"
#include "io/GgmlQuantize.h"
#include "util/Error.h"

#include <algorithm>
#include <cctype>

namespace qs {

namespace {

// Rows indexed by type id: ggml.c's type_traits (blck_size, type_size); ids 4, 5, 31-33 and
// 36-38 were removed from ggml. fileType: llama.h's LLAMA_FTYPE_ALL_F32 / MOSTLY_*; Q4_K is
// MOSTLY_Q4_K_S because the exporter promotes no tensor to a wider type (llama-quantize's
// Q4_K_M mixture does). `offered`: the order of the GGUF export's type list (auto first, then
// these).
const GgmlTypeTraits kTypes[] = {
    /*  0 */ {"F32", 1, 4, 0, ggmlDequantizeF32Row, ggmlQuantizeF32Row, 8},
    /*  1 */ {"F16", 1, 2, 1, ggmlDequantizeF16Row, ggmlQuantizeF16Row, 6},
    /*  2 */ {"Q4_0", 32, 18, 2, ggmlDequantizeQ4_0Row, ggmlQuantizeQ4_0Row, 2},
    /*  3 */ {"Q4_1", 32, 20, 3, ggmlDequantizeQ4_1Row, ggmlQuantizeQ4_1Row, 3},
    /*  4 */ {},
    /*  5 */ {},
    /*  6 */ {"Q5_0", 32, 22, 8, ggmlDequantizeQ5_0Row, ggmlQuantizeQ5_0Row, 0},
    /*  7 */ {"Q5_1", 32, 24},
    /*  8 */ {"Q8_0", 32, 34, 7, ggmlDequantizeQ8_0Row, ggmlQuantizeQ8_0Row, 1},
    /*  9 */ {"Q8_1", 32, 36},
    /* 10 */ {"Q2_K", 256, 84},
    /* 11 */ {"Q3_K", 256, 110},
    /* 12 */ {"Q4_K", 256, 144, 14, ggmlDequantizeQ4KRow, ggmlQuantizeQ4KRow, 4},
    /* 13 */ {"Q5_K", 256, 176},
    /* 14 */ {"Q6_K", 256, 210, 18, ggmlDequantizeQ6KRow, ggmlQuantizeQ6KRow, 5},
    /* 15 */ {"Q8_K", 256, 292},
    /* 16 */ {"IQ2_XXS", 256, 66},
    /* 17 */ {"IQ2_XS", 256, 74},
    /* 18 */ {"IQ3_XXS", 256, 98},
    /* 19 */ {"IQ1_S", 256, 50},
    /* 20 */ {"IQ4_NL", 32, 18},
    /* 21 */ {"IQ3_S", 256, 110},
    /* 22 */ {"IQ2_S", 256, 82},
    /* 23 */ {"IQ4_XS", 256, 136},
    /* 24 */ {"I8", 1, 1},
    /* 25 */ {"I16", 1, 2},
    /* 26 */ {"I32", 1, 4},
    /* 27 */ {"I64", 1, 8},
    /* 28 */ {"F64", 1, 8},
    /* 29 */ {"IQ1_M", 256, 56},
    /* 30 */ {"BF16", 1, 2, 32, ggmlDequantizeBF16Row, ggmlQuantizeBF16Row, 7},
    /* 31 */ {},
    /* 32 */ {},
    /* 33 */ {},
    /* 34 */ {"TQ1_0", 256, 54},
    /* 35 */ {"TQ2_0", 256, 66},
    /* 36 */ {},
    /* 37 */ {},
    /* 38 */ {},
    /* 39 */ {"MXFP4", 32, 17},
};
constexpr uint32_t kTypeCount = sizeof kTypes / sizeof *kTypes;

const GgmlTypeTraits kUnknown{};

} // namespace

const GgmlTypeTraits& ggmlTypeTraits(uint32_t type) {
    return type < kTypeCount ? kTypes[type] : kUnknown;
}

std::string ggmlTypeLabel(uint32_t type) {
    return "type " + std::to_string(type) + " (" + ggmlTypeTraits(type).name + ")";
}

std::string ggmlTypeName(GgmlType type) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    if (traits.blockSize == 0)
        return "type " + std::to_string(uint32_t(type));
    std::string name = traits.name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return name;
}

std::vector<GgmlType> ggmlOfferedTypes() {
    std::vector<GgmlType> types;
    for (uint32_t id = 0; id < kTypeCount; ++id)
        if (kTypes[id].offered > 0 && kTypes[id].fromFloat)
            types.push_back(GgmlType(id));
    std::stable_sort(types.begin(), types.end(), [](GgmlType a, GgmlType b) {
        return ggmlTypeTraits(a).offered < ggmlTypeTraits(b).offered;
    });
    return types;
}

std::optional<GgmlType> ggmlOfferedTypeByName(const std::string& name) {
    for (GgmlType t : ggmlOfferedTypes())
        if (ggmlTypeName(t) == name)
            return t;
    return std::nullopt;
}

uint64_t ggmlRowBytes(int64_t n, GgmlType type) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    return traits.blockSize ? uint64_t(n / traits.blockSize) * traits.blockBytes : 0;
}

bool ggmlIsFloat(GgmlType type) {
    return ggmlTypeTraits(type).blockSize == 1;
}

std::string ggmlQuantizeRow(const float* x, int64_t n, GgmlType type) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    if (!traits.fromFloat)
        throw Error("ggml", "type", ggmlTypeLabel(uint32_t(type)) + " is not written");
    std::string out(ggmlRowBytes(n, type), '\0');
    traits.fromFloat(x, n, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

} // namespace qs
