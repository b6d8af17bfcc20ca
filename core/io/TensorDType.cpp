#include "io/TensorDType.h"

namespace qs {

std::optional<at::ScalarType> denseScalarType(DType t) {
    switch (t) {
    case DType::F64:
        return at::kDouble;
    case DType::F32:
        return at::kFloat;
    case DType::F16:
        return at::kHalf;
    case DType::BF16:
        return at::kBFloat16;
    case DType::I64:
        return at::kLong;
    case DType::I32:
        return at::kInt;
    case DType::I16:
        return at::kShort;
    case DType::I8:
        return at::kChar;
    case DType::U8:
        return at::kByte;
    case DType::Bool:
        return at::kBool;
    default:
        return std::nullopt;
    }
}

std::optional<DType> dtypeOfScalarType(at::ScalarType t) {
    for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                    DType::I16, DType::I8, DType::U8, DType::Bool})
        if (denseScalarType(d) == t)
            return d;
    return std::nullopt;
}

at::ScalarType storedFloatType(DType t) {
    return t == DType::BF16 ? at::kBFloat16 : t == DType::F16 ? at::kHalf : at::kFloat;
}

} // namespace qs
