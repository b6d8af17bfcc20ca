#pragma once

#include "io/GgmlTypes.h"

#include <QFile>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs {

// GGUF value types (gguf.h gguf_type).
enum class GgufValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
const char* ggufValueTypeName(GgufValueType type);

// One metadata value. Integers keep their type's value in `u` (unsigned types, bool) or `i`
// (signed types); floats in `f`; arrays their element type and elements (arrays may nest).
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0.0;
    std::string s;
    GgufValueType elementType = GgufValueType::U8; // arrays only
    std::vector<GgufValue> array;

    bool isInteger() const;
    // The value as an integer / a number, or qs::Error naming `source` and `key` when it is
    // neither (or a negative value asked for as unsigned).
    uint64_t toUnsigned(const std::string& source, const std::string& key) const;
    double toNumber(const std::string& source, const std::string& key) const;
};

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims; // GGUF order: dims[0] (ne0) is the innermost, the row length
    uint32_t type = 0;         // ggml type id
    uint64_t offset = 0;       // relative to the data section, a multiple of the alignment
    uint64_t byteSize = 0;     // rows × row bytes of `type`
    int64_t numel() const;
    // Shape in row-major (PyTorch) order: dims reversed.
    std::vector<int64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
};

struct GgufHeader {
    uint32_t version = 0;
    std::map<std::string, GgufValue> metadata;
    std::vector<std::string> keyOrder;   // metadata keys in file order
    std::vector<GgufTensorInfo> tensors; // in file order
    uint64_t alignment = 32;             // general.alignment, default 32
    uint64_t dataOffset = 0;             // start of the data section (end of header, aligned)

    const GgufValue* find(const std::string& key) const;
};

// Limits on what a header may declare; a larger value is a corrupt or hostile file. Each is
// named in the qs::Error that refuses it.
struct GgufLimits {
    static constexpr uint64_t kMaxKvCount = 1 << 16;     // real files: ~20-60 keys
    static constexpr uint64_t kMaxTensorCount = 1 << 20; // a 128-expert MoE: ~20k tensors
    static constexpr uint64_t kMaxStringBytes = 1 << 24; // chat templates: ~10 KB
    static constexpr uint64_t kMaxArrayLength = 1 << 24; // vocabularies, merges: < 1M
    static constexpr uint32_t kMaxArrayDepth = 4;        // arrays of arrays of ...
    static constexpr uint32_t kMaxDims = 4;              // GGML_MAX_DIMS
    static constexpr uint64_t kMaxNameBytes = 63;        // GGML_MAX_NAME - 1
};

// Parses and validates a complete GGUF v2/v3 file image (`size` bytes at `data`): magic,
// version, counts and lengths within GgufLimits and within the bytes left, every value type
// known, unique keys and tensor names, general.alignment a power of two, tensor dims in [1, 2^63)
// with a checked element count, a type ggml defines with ne0 a multiple of its block size, and
// each tensor's offset aligned with its bytes inside the file, no two overlapping. Tensor data
// is not read. Throws qs::Error naming `source`, the field and the limit or reason. The fuzz
// target drives this function.
GgufHeader parseGgufHeader(const uint8_t* data, uint64_t size, const std::string& source);

// A GGUF file mapped read-only; tensor bytes are only touched when asked for.
class GgufFile {
public:
    static std::unique_ptr<GgufFile> open(const std::string& path);
    ~GgufFile();

    const std::string& path() const { return m_path; }
    const GgufHeader& header() const { return m_header; }
    const GgufTensorInfo* find(const std::string& name) const; // nullptr when absent
    const uint8_t* data(const GgufTensorInfo& info) const;
    // The tensor decoded to float, row-major (numel() values); qs::Error naming the tensor and
    // its type when ggmlDequantizeRow does not decode that type.
    std::vector<float> dequantize(const GgufTensorInfo& info) const;

private:
    GgufFile() = default;
    std::string m_path;
    QFile m_file;
    const uint8_t* m_map = nullptr;
    uint64_t m_size = 0;
    GgufHeader m_header;
    std::unordered_map<std::string, size_t> m_index;
};

} // namespace qs
