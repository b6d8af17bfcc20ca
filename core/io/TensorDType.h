// The one mapping between safetensors element types and ATen scalar types. DType.h stays
// Torch-free for the readers that never make tensors; everything that wraps stored bytes in a
// tensor or stores a tensor goes through these.
#pragma once

#include "io/DType.h"

#include <c10/core/ScalarType.h>

#include <optional>

namespace qs {

// The ATen type whose elements have exactly a stored element's bits and meaning; nullopt for
// quantized storage that has none (FP8, FP4, E8M0 scales, unsigned 16-64-bit).
std::optional<at::ScalarType> denseScalarType(DType t);
// The safetensors type of a tensor's elements; nullopt for ATen types safetensors lacks.
std::optional<DType> dtypeOfScalarType(at::ScalarType t);
// Where float values from a checkpoint of element type `t` are written back: bf16 and fp16 keep
// their type, everything else becomes fp32.
at::ScalarType storedFloatType(DType t);

} // namespace qs
