#pragma once

#include "util/Protobuf.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

// The subset of ONNX's protobuf messages (onnx/onnx.proto, proto2) that the ONNX exporter writes,
// serialised with the hand-written wire format of util/Protobuf.h: no protobuf or ONNX library is
// linked (Debian's libonnx-dev is not needed). Field numbers are onnx.proto's.
namespace qs::onnx {

// TensorProto.DataType.
enum class ElemType : int32_t {
    Float = 1,
    Uint8 = 2,
    Int8 = 3,
    Int32 = 6,
    Int64 = 7,
    Float8E4M3FN = 17,
    Float8E5M2 = 19,
    Uint4 = 21,
    Int4 = 22,
};

// ONNX's name of the type: "FLOAT", "INT4", "FLOAT8E4M3FN", ...
std::string elemTypeName(ElemType type);
// Bytes of `count` elements of `type` in raw_data (4-bit types: two per byte, rounded up).
uint64_t rawBytes(ElemType type, int64_t count);

// One node attribute (AttributeProto): an int, a float, a list of ints or a string.
struct Attribute {
    std::string name;
    std::variant<int64_t, float, std::vector<int64_t>, std::string> value;
};

// A dimension of a graph input/output: fixed, or named (dim_param: "batch", "sequence").
using Dim = std::variant<int64_t, std::string>;

// Serialised TensorProto: dims, data_type, name, raw_data (little endian; 4-bit types packed
// low nibble first, as onnx.proto specifies).
std::string tensorProto(const std::string& name, ElemType type, const std::vector<int64_t>& dims,
                        const std::string& raw);
// Serialised TensorProto whose bytes live in another file (data_location EXTERNAL):
// external_data {location, offset, length}, the path relative to the model file.
std::string externalTensorProto(const std::string& name, ElemType type,
                                const std::vector<int64_t>& dims, const std::string& location,
                                uint64_t offset, uint64_t length);
// Serialised NodeProto.
std::string nodeProto(const std::string& opType, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, const std::string& name,
                      const std::vector<Attribute>& attributes = {});
// Serialised ValueInfoProto of a tensor.
std::string valueInfo(const std::string& name, ElemType type, const std::vector<Dim>& dims);

} // namespace qs::onnx
