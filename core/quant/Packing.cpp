#include "quant/Packing.h"

#include "quant/FloatFormats.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"
#include "util/HostTensor.h"

#include <ATen/ATen.h>

#include <array>

namespace qs::quant {

namespace {

constexpr std::array<int, 8> kReorder{0, 2, 4, 6, 1, 3, 5, 7};
constexpr std::array<int, 8> kOrder{0, 1, 2, 3, 4, 5, 6, 7};

const std::array<int, 8>& orderOf(PackOrder o) {
    return o == PackOrder::Reorder ? kReorder : kOrder;
}

// [..., n] -> contiguous [rows, n] plus the leading shape.
struct Flat {
    at::Tensor rows;
    std::vector<int64_t> lead;
};

Flat flatten(const at::Tensor& t, at::ScalarType dtype, const char* what) {
    if (t.dim() < 1)
        throw Error(what, "", "expected at least a 1-D tensor");
    Flat f;
    f.lead.assign(t.sizes().begin(), t.sizes().end() - 1);
    f.rows = toHost(t.to(dtype)).reshape({-1, t.size(-1)});
    return f;
}

at::Tensor unflatten(const at::Tensor& rows, std::vector<int64_t> lead, int64_t last) {
    lead.push_back(last);
    return rows.reshape(lead);
}

void checkIntegral(const at::Tensor& t, const char* what) {
    if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
        throw Error(what, "", "expected integer codes");
}

} // namespace

at::Tensor packInt4(const at::Tensor& codes, PackOrder order) {
    checkIntegral(codes, "packInt4");
    const Flat f = flatten(codes, at::kInt, "packInt4");
    const int64_t rows = f.rows.size(0), n = f.rows.size(1), words = (n + 7) / 8;
    at::Tensor out = at::zeros({rows, words}, at::kInt);
    const int32_t* in = f.rows.data_ptr<int32_t>();
    int32_t* po = out.data_ptr<int32_t>();
    const auto& map = orderOf(order);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t w = 0; w < words; ++w) {
            uint32_t word = 0;
            for (int i = 0; i < 8; ++i) {
                const int64_t idx = w * 8 + map[i];
                if (idx < n)
                    word |= (static_cast<uint32_t>(in[r * n + idx]) & 0xFu) << (4 * i);
            }
            po[r * words + w] = static_cast<int32_t>(word);
        }
    }
    return unflatten(out, f.lead, words);
}

at::Tensor unpackInt4(const at::Tensor& packed, PackOrder order, bool isSigned, int64_t n) {
    if (packed.scalar_type() != at::kInt)
        throw Error("unpackInt4", "", "expected int32 words");
    const Flat f = flatten(packed, at::kInt, "unpackInt4");
    const int64_t rows = f.rows.size(0), words = f.rows.size(1);
    if (n < 0 || (n + 7) / 8 != words)
        throw Error("unpackInt4", "n", "length does not match the packed words");
    at::Tensor out = at::empty({rows, n}, at::kInt);
    const int32_t* in = f.rows.data_ptr<int32_t>();
    int32_t* po = out.data_ptr<int32_t>();
    const auto& map = orderOf(order);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t w = 0; w < words; ++w) {
            const auto word = static_cast<uint32_t>(in[r * words + w]);
            for (int i = 0; i < 8; ++i) {
                const int64_t idx = w * 8 + map[i];
                if (idx >= n)
                    continue;
                int32_t v = static_cast<int32_t>((word >> (4 * i)) & 0xFu);
                if (isSigned && v >= 8)
                    v -= 16;
                po[r * n + idx] = v;
            }
        }
    }
    return unflatten(out, f.lead, n);
}

at::Tensor packInt3(const at::Tensor& codes) {
    checkIntegral(codes, "packInt3");
    const Flat f = flatten(codes, at::kInt, "packInt3");
    const int64_t rows = f.rows.size(0), n = f.rows.size(1);
    if (n % 8 != 0)
        throw Error("packInt3", "", "the last axis must be a multiple of 8 (Quark Pack_3_bits)");
    at::Tensor out = at::empty({rows, n / 8 * 3}, at::kByte);
    const int32_t* in = f.rows.data_ptr<int32_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t b = 0; b < rows * n / 8; ++b) {
        uint32_t word = 0;
        for (int k = 0; k < 8; ++k)
            word |= (static_cast<uint32_t>(in[b * 8 + k]) & 0x7u) << (3 * k);
        for (int k = 0; k < 3; ++k)
            po[b * 3 + k] = static_cast<uint8_t>(word >> (8 * k));
    }
    return unflatten(out, f.lead, n / 8 * 3);
}

at::Tensor unpackInt3(const at::Tensor& packed, bool isSigned) {
    if (packed.scalar_type() != at::kByte)
        throw Error("unpackInt3", "", "expected uint8 bytes");
    const Flat f = flatten(packed, at::kByte, "unpackInt3");
    const int64_t rows = f.rows.size(0), bytes = f.rows.size(1);
    if (bytes % 3 != 0)
        throw Error("unpackInt3", "", "the packed axis must be a multiple of 3 bytes");
    const int64_t n = bytes / 3 * 8;
    at::Tensor out = at::empty({rows, n}, at::kInt);
    const uint8_t* in = f.rows.data_ptr<uint8_t>();
    int32_t* po = out.data_ptr<int32_t>();
    for (int64_t b = 0; b < rows * bytes / 3; ++b) {
        const uint32_t word = in[b * 3] | (in[b * 3 + 1] << 8) | (in[b * 3 + 2] << 16);
        for (int k = 0; k < 8; ++k) {
            int32_t v = static_cast<int32_t>((word >> (3 * k)) & 0x7u);
            if (isSigned && v >= 4)
                v -= 8;
            po[b * 8 + k] = v;
        }
    }
    return unflatten(out, f.lead, n);
}

at::Tensor packFp4(const at::Tensor& codes) {
    if (codes.scalar_type() != at::kByte)
        throw Error("packFp4", "", "expected uint8 FP4 codes");
    const Flat f = flatten(codes, at::kByte, "packFp4");
    const int64_t rows = f.rows.size(0), n = f.rows.size(1);
    if (n % 2 != 0)
        throw Error("packFp4", "", "the last axis must be even");
    at::Tensor out = at::empty({rows, n / 2}, at::kByte);
    const uint8_t* in = f.rows.data_ptr<uint8_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t i = 0; i < rows * n / 2; ++i)
        po[i] = static_cast<uint8_t>((in[2 * i] & 0x0Fu) | ((in[2 * i + 1] & 0x0Fu) << 4));
    return unflatten(out, f.lead, n / 2);
}

at::Tensor unpackFp4(const at::Tensor& packed) {
    if (packed.scalar_type() != at::kByte)
        throw Error("unpackFp4", "", "expected uint8 bytes");
    const Flat f = flatten(packed, at::kByte, "unpackFp4");
    const int64_t rows = f.rows.size(0), bytes = f.rows.size(1);
    at::Tensor out = at::empty({rows, bytes * 2}, at::kByte);
    const uint8_t* in = f.rows.data_ptr<uint8_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t i = 0; i < rows * bytes; ++i) {
        po[2 * i] = in[i] & 0x0Fu;
        po[2 * i + 1] = (in[i] >> 4) & 0x0Fu;
    }
    return unflatten(out, f.lead, bytes * 2);
}

at::Tensor packFp6(const at::Tensor& codes) {
    if (codes.scalar_type() != at::kByte)
        throw Error("packFp6", "", "expected uint8 FP6 codes");
    const Flat f = flatten(codes, at::kByte, "packFp6");
    const int64_t rows = f.rows.size(0), n = f.rows.size(1);
    if (n % 4 != 0)
        throw Error("packFp6", "", "the last axis must be a multiple of 4 (Quark Pack_fp6)");
    at::Tensor out = at::empty({rows, n / 4 * 3}, at::kByte);
    const uint8_t* in = f.rows.data_ptr<uint8_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t b = 0; b < rows * n / 4; ++b) {
        uint32_t word = 0;
        for (int k = 0; k < 4; ++k)
            word |= (static_cast<uint32_t>(in[b * 4 + k]) & 0x3Fu) << (6 * k);
        for (int k = 0; k < 3; ++k)
            po[b * 3 + k] = static_cast<uint8_t>(word >> (8 * k));
    }
    return unflatten(out, f.lead, n / 4 * 3);
}

at::Tensor unpackFp6(const at::Tensor& packed) {
    if (packed.scalar_type() != at::kByte)
        throw Error("unpackFp6", "", "expected uint8 bytes");
    const Flat f = flatten(packed, at::kByte, "unpackFp6");
    const int64_t rows = f.rows.size(0), bytes = f.rows.size(1);
    if (bytes % 3 != 0)
        throw Error("unpackFp6", "", "the packed axis must be a multiple of 3 bytes");
    at::Tensor out = at::empty({rows, bytes / 3 * 4}, at::kByte);
    const uint8_t* in = f.rows.data_ptr<uint8_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t b = 0; b < rows * bytes / 3; ++b) {
        const uint32_t word = in[b * 3] | (in[b * 3 + 1] << 8) | (in[b * 3 + 2] << 16);
        for (int k = 0; k < 4; ++k)
            po[b * 4 + k] = static_cast<uint8_t>((word >> (6 * k)) & 0x3Fu);
    }
    return unflatten(out, f.lead, bytes / 3 * 4);
}

at::Tensor e8m0FromScale(const at::Tensor& scale) {
    const at::Tensor s = toHost(scale.to(at::kFloat));
    at::Tensor out = at::empty(s.sizes(), at::kByte);
    const float* in = s.data_ptr<float>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t i = 0; i < s.numel(); ++i) {
        try {
            po[i] = encodeE8M0(in[i]);
        } catch (const std::invalid_argument& e) {
            throw Error("e8m0FromScale", "scale", e.what());
        }
    }
    return out;
}

at::Tensor scaleFromE8m0(const at::Tensor& codes) {
    if (codes.scalar_type() != at::kByte)
        throw Error("scaleFromE8m0", "", "expected uint8 codes");
    const at::Tensor c = toHost(codes);
    at::Tensor out = at::empty(c.sizes(), at::kFloat);
    const uint8_t* in = c.data_ptr<uint8_t>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < c.numel(); ++i)
        po[i] = decodeE8M0(in[i]);
    return out;
}

at::Tensor packCodes(const QuantizedTensor& q, PackOrder order) {
    const TypeTraits& t = traits(q.dtype);
    switch (t.pack) {
    case PackFormat::Int4Words:
        return packInt4(q.codes, order);
    case PackFormat::Int3Bytes:
        return packInt3(q.codes);
    case PackFormat::Fp4Nibbles:
        return packFp4(q.codes);
    case PackFormat::Fp6Bytes:
        return packFp6(q.codes);
    case PackFormat::Bytes:
        if (t.encoding == Encoding::Int || q.dtype == DataType::MxInt8)
            return q.codes.to(t.qmin < 0 ? at::kChar : at::kByte);
        return q.codes.to(at::kByte);
    case PackFormat::None:
        return q.codes;
    }
    return q.codes;
}

at::Tensor unpackCodes(const at::Tensor& packed, DataType dtype, int64_t n, PackOrder order) {
    const TypeTraits& t = traits(dtype);
    switch (t.pack) {
    case PackFormat::Int4Words:
        return unpackInt4(packed, order, t.qmin < 0, n);
    case PackFormat::Int3Bytes:
        return unpackInt3(packed, true);
    case PackFormat::Fp4Nibbles:
        return unpackFp4(packed);
    case PackFormat::Fp6Bytes:
        return unpackFp6(packed);
    case PackFormat::Bytes:
        return (t.encoding == Encoding::Int || dtype == DataType::MxInt8) ? packed.to(at::kInt)
                                                                          : packed.to(at::kByte);
    case PackFormat::None:
        return packed;
    }
    return packed;
}

} // namespace qs::quant
