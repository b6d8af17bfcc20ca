// Plain enums of the quantization core and their canonical names. No Torch here: views, the
// CLI parser and the recipe code include this to list choices and parse user input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qs::quant {

// One value per row of the scheme-traits table (TypeTraits.h).
enum class DataType : uint8_t {
    Int2,
    Int3,
    Int4,
    Uint4,
    Int8,
    Uint8,
    Fp8E4M3,
    Fp8E5M2,
    Fp6E3M2,
    Fp6E2M3,
    Fp4, // E2M1
    MxFp4,
    MxFp6E3M2,
    MxFp6E2M3,
    MxFp8E4M3,
    MxFp8E5M2,
    MxInt8,
    NvFp4,
    Mx6,   // Quark's MX6 (shared exponent + shared "prime" bit per pair), fake quantization only
    Bfp16, // Quark's block floating point, 8 elements per shared exponent, fake quantization only
    BFloat16,
    Float16,
};

// How a row's values are encoded, which selects the kernel family that quantizes it.
enum class Encoding : uint8_t {
    Int,         // affine integer codes with float scale (+ zero point)
    Float,       // scaled minifloat (FP8/FP6/FP4) with a float or E8M0 scale
    Mx,          // OCP MX: blocks of 32 sharing an E8M0 power-of-two scale
    NvFp4,       // FP4 groups of 16, FP8 E4M3 group scale, FP32 tensor scale
    BlockFloat,  // Quark's "non-scaled" block formats (mx6, bfp16): scale derived inside the kernel
    PassThrough, // bf16 / fp16 cast
};

enum class Granularity : uint8_t { PerTensor, PerChannel, PerGroup, PerToken };

// Float: scale kept in the model's dtype (Quark "float"); Float32: always fp32;
// Pow2: power-of-two scale (Quark "pof2"); E8M0: MX shared exponent;
// E4M3: NVFP4's FP8 group scale under an FP32 tensor scale.
enum class ScaleType : uint8_t { Float, Float32, Pow2, E8M0, E4M3 };

// Quark also knows "round" and "floor"; only half-to-even is supported here (it is what every
// Quark scheme uses).
enum class RoundMethod : uint8_t { HalfEven };

enum class ObserverKind : uint8_t { MinMax, Percentile, Mse };

// Nibble order inside an int32 word for int4/uint4 (Quark export "pack_method").
enum class PackOrder : uint8_t { Reorder, Order };

// How a tensor is used, which decides how an ambiguous Quark spec maps onto ours (a dynamic
// per-channel spec with ch_axis 1 on activations is Quark's per-token quantization).
enum class TensorRole : uint8_t { Weight, Input, Output };

std::string granularityName(Granularity g); // "per_tensor", ... (Quark qscheme names)
std::optional<Granularity> granularityFromName(std::string_view name);
std::vector<std::string> granularityNames();

std::string scaleTypeName(ScaleType s); // "float", "float32", "pow2", "e8m0", "e4m3"
std::optional<ScaleType> scaleTypeFromName(std::string_view name);
std::vector<std::string> scaleTypeNames();

std::string roundMethodName(RoundMethod r); // "half_even"
std::optional<RoundMethod> roundMethodFromName(std::string_view name);

std::string observerName(ObserverKind o); // "minmax", "percentile", "mse"
std::optional<ObserverKind> observerFromName(std::string_view name);
std::vector<std::string> observerNames();

std::string packOrderName(PackOrder p); // "reorder", "order"
std::optional<PackOrder> packOrderFromName(std::string_view name);

std::string encodingName(Encoding e);

} // namespace qs::quant
