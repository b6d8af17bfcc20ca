#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qs {

// Element types of safetensors files (names as the format spells them).
enum class DType : uint8_t {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
    Bool,
    F8_E4M3,
    F8_E5M2,
    F8_E8M0,
    F4 // two FP4 E2M1 values per byte; numel must be even
};

// Size in bits of one element (F4 is 4, everything else a multiple of 8).
int dtypeBits(DType t);
std::string dtypeName(DType t);
std::optional<DType> dtypeFromName(const std::string& name);

} // namespace qs
