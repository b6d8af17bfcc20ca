#include "export/OnnxProto.h"

#include <cstring>

namespace qs::onnx {

namespace {

// AttributeProto.AttributeType.
enum AttributeType : uint64_t { kFloat = 1, kInt = 2, kString = 3, kInts = 7 };

} // namespace

std::string elemTypeName(ElemType type) {
    switch (type) {
    case ElemType::Float:
        return "FLOAT";
    case ElemType::Uint8:
        return "UINT8";
    case ElemType::Int8:
        return "INT8";
    case ElemType::Int32:
        return "INT32";
    case ElemType::Int64:
        return "INT64";
    case ElemType::Float8E4M3FN:
        return "FLOAT8E4M3FN";
    case ElemType::Float8E5M2:
        return "FLOAT8E5M2";
    case ElemType::Uint4:
        return "UINT4";
    case ElemType::Int4:
        return "INT4";
    }
    return "type " + std::to_string(int32_t(type));
}

uint64_t rawBytes(ElemType type, int64_t count) {
    switch (type) {
    case ElemType::Float:
    case ElemType::Int32:
        return uint64_t(count) * 4;
    case ElemType::Int64:
        return uint64_t(count) * 8;
    case ElemType::Uint4:
    case ElemType::Int4:
        return (uint64_t(count) + 1) / 2;
    default:
        return uint64_t(count);
    }
}

std::string tensorProto(const std::string& name, ElemType type, const std::vector<int64_t>& dims,
                        const std::string& raw) {
    ProtoWriter t;
    for (int64_t d : dims)
        t.varint(1, uint64_t(d)); // dims
    t.varint(2, uint64_t(type));  // data_type
    t.bytes(8, name);             // name
    t.bytes(9, raw);              // raw_data
    return t.data();
}

std::string externalTensorProto(const std::string& name, ElemType type,
                                const std::vector<int64_t>& dims, const std::string& location,
                                uint64_t offset, uint64_t length) {
    ProtoWriter t;
    for (int64_t d : dims)
        t.varint(1, uint64_t(d));
    t.varint(2, uint64_t(type));
    t.bytes(8, name);
    const std::pair<const char*, std::string> entries[] = {{"location", location},
                                                           {"offset", std::to_string(offset)},
                                                           {"length", std::to_string(length)}};
    for (const auto& [key, value] : entries) {
        ProtoWriter e; // StringStringEntryProto
        e.bytes(1, key);
        e.bytes(2, value);
        t.message(13, e); // external_data
    }
    t.varint(14, 1); // data_location = EXTERNAL
    return t.data();
}

std::string nodeProto(const std::string& opType, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, const std::string& name,
                      const std::vector<Attribute>& attributes) {
    ProtoWriter n;
    for (const std::string& i : inputs)
        n.bytes(1, i);
    for (const std::string& o : outputs)
        n.bytes(2, o);
    n.bytes(3, name);
    n.bytes(4, opType);
    for (const Attribute& a : attributes) {
        ProtoWriter w;
        w.bytes(1, a.name);
        if (const int64_t* i = std::get_if<int64_t>(&a.value)) {
            w.varint(3, uint64_t(*i)); // negative ints: ten-byte two's complement varint
            w.varint(20, kInt);
        } else if (const float* f = std::get_if<float>(&a.value)) {
            uint32_t bits;
            std::memcpy(&bits, f, 4);
            w.fixed32(2, bits);
            w.varint(20, kFloat);
        } else if (const auto* list = std::get_if<std::vector<int64_t>>(&a.value)) {
            for (int64_t v : *list)
                w.varint(8, uint64_t(v));
            w.varint(20, kInts);
        } else {
            w.bytes(4, std::get<std::string>(a.value));
            w.varint(20, kString);
        }
        n.message(5, w);
    }
    return n.data();
}

std::string valueInfo(const std::string& name, ElemType type, const std::vector<Dim>& dims) {
    ProtoWriter shape;
    for (const Dim& d : dims) {
        ProtoWriter dim;
        if (const int64_t* v = std::get_if<int64_t>(&d))
            dim.varint(1, uint64_t(*v)); // dim_value
        else
            dim.bytes(2, std::get<std::string>(d)); // dim_param
        shape.message(1, dim);
    }
    ProtoWriter tensor;
    tensor.varint(1, uint64_t(type)); // elem_type
    tensor.message(2, shape);
    ProtoWriter typeProto;
    typeProto.message(1, tensor); // tensor_type
    ProtoWriter info;
    info.bytes(1, name);
    info.message(2, typeProto);
    return info.data();
}

} // namespace qs::onnx
