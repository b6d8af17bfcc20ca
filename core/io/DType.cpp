#include "io/DType.h"

#include <array>
#include <stdexcept>

namespace qs {

namespace {

struct DTypeEntry {
    DType type;
    const char* name;
    int bits;
};

// Names exactly as the safetensors format spells them (Rust `Dtype` serialisation).
constexpr std::array<DTypeEntry, 17> kDTypes = {{
    {DType::F64, "F64", 64},
    {DType::F32, "F32", 32},
    {DType::F16, "F16", 16},
    {DType::BF16, "BF16", 16},
    {DType::I64, "I64", 64},
    {DType::I32, "I32", 32},
    {DType::I16, "I16", 16},
    {DType::I8, "I8", 8},
    {DType::U64, "U64", 64},
    {DType::U32, "U32", 32},
    {DType::U16, "U16", 16},
    {DType::U8, "U8", 8},
    {DType::Bool, "BOOL", 8},
    {DType::F8_E4M3, "F8_E4M3", 8},
    {DType::F8_E5M2, "F8_E5M2", 8},
    {DType::F8_E8M0, "F8_E8M0", 8},
    {DType::F4, "F4", 4},
}};

static_assert(kDTypes.size() == size_t(DType::F4) + 1, "one table row per DType enumerator");

constexpr bool tableInEnumOrder() {
    for (size_t i = 0; i < kDTypes.size(); ++i)
        if (size_t(kDTypes[i].type) != i)
            return false;
    return true;
}
static_assert(tableInEnumOrder(), "rows must follow the enum order so lookup can index");

const DTypeEntry& entryOf(DType t) {
    const size_t index = size_t(t);
    // Only a bad cast can produce an out-of-range value; fail loudly rather than guess a size.
    if (index >= kDTypes.size())
        throw std::logic_error("invalid DType value " + std::to_string(index));
    return kDTypes[index];
}

} // namespace

int dtypeBits(DType t) {
    return entryOf(t).bits;
}

std::string dtypeName(DType t) {
    return entryOf(t).name;
}

std::optional<DType> dtypeFromName(const std::string& name) {
    for (const DTypeEntry& e : kDTypes)
        if (name == e.name)
            return e.type;
    return std::nullopt;
}

} // namespace qs
