#include "io/GgufFile.h"

#include "io/GgmlDequantize.h"
#include "util/Error.h"

#include <QFileInfo>
#include <QString>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace qs {

namespace {

using Limits = GgufLimits;

// Smallest encoding of one metadata entry (empty key, 8-byte length, type, 1-byte value) and
// of one tensor info (empty name, one dim, type, offset): a count larger than the bytes left
// divided by these cannot be real, and is refused before anything is reserved.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

std::string str(uint64_t v) {
    return std::to_string(v);
}

// A bounds-checked little-endian cursor over the file image.
class Reader {
public:
    Reader(const uint8_t* data, uint64_t size, const std::string& source)
        : m_data(data), m_size(size), m_source(source) {}

    uint64_t pos() const { return m_pos; }
    uint64_t left() const { return m_size - m_pos; }
    const std::string& source() const { return m_source; }

    void need(uint64_t bytes, const std::string& field) const {
        if (bytes > left())
            throw Error(m_source, field,
                        "truncated: needs " + str(bytes) + " bytes at offset " + str(m_pos) +
                            ", the file has " + str(left()) + " left");
    }
    // GGUF is little endian, as every host this builds for (x86-64, aarch64).
    template <typename T> T read(const std::string& field) {
        need(sizeof(T), field);
        T out;
        std::memcpy(&out, m_data + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return out;
    }
    std::string string(const std::string& field) {
        const uint64_t length = read<uint64_t>(field + " (length)");
        if (length > Limits::kMaxStringBytes)
            throw Error(m_source, field,
                        "string length " + str(length) + " exceeds the limit of " +
                            str(Limits::kMaxStringBytes) + " bytes (kMaxStringBytes)");
        need(length, field);
        std::string s(reinterpret_cast<const char*>(m_data + m_pos), size_t(length));
        m_pos += length;
        return s;
    }

private:
    const uint8_t* m_data;
    uint64_t m_size;
    uint64_t m_pos = 0;
    const std::string& m_source;
};

uint64_t scalarBytes(GgufValueType t) {
    switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::Bool:
        return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
        return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
        return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
        return 8;
    case GgufValueType::String:
        return 8; // the length, at least
    case GgufValueType::Array:
        return 4 + 8; // element type and count, at least
    }
    return 0;
}

GgufValueType valueType(uint32_t raw, const std::string& source, const std::string& field) {
    if (raw > uint32_t(GgufValueType::F64))
        throw Error(source, field, "unknown GGUF value type " + str(raw));
    return GgufValueType(raw);
}

GgufValue readValue(Reader& r, GgufValueType type, const std::string& field, uint32_t depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
    case GgufValueType::U8:
        v.u = r.read<uint8_t>(field);
        break;
    case GgufValueType::I8:
        v.i = r.read<int8_t>(field);
        break;
    case GgufValueType::U16:
        v.u = r.read<uint16_t>(field);
        break;
    case GgufValueType::I16:
        v.i = r.read<int16_t>(field);
        break;
    case GgufValueType::U32:
        v.u = r.read<uint32_t>(field);
        break;
    case GgufValueType::I32:
        v.i = r.read<int32_t>(field);
        break;
    case GgufValueType::U64:
        v.u = r.read<uint64_t>(field);
        break;
    case GgufValueType::I64:
        v.i = r.read<int64_t>(field);
        break;
    case GgufValueType::F32:
        v.f = r.read<float>(field);
        break;
    case GgufValueType::F64:
        v.f = r.read<double>(field);
        break;
    case GgufValueType::Bool: {
        const uint8_t b = r.read<uint8_t>(field);
        if (b > 1)
            throw Error(r.source(), field, "bool value " + str(b) + " is neither 0 nor 1");
        v.u = b;
        break;
    }
    case GgufValueType::String:
        v.s = r.string(field);
        break;
    case GgufValueType::Array: {
        if (depth >= Limits::kMaxArrayDepth)
            throw Error(r.source(), field,
                        "arrays nest deeper than the limit of " + str(Limits::kMaxArrayDepth) +
                            " (kMaxArrayDepth)");
        v.elementType = valueType(r.read<uint32_t>(field + " (element type)"), r.source(),
                                  field + " (element type)");
        const uint64_t count = r.read<uint64_t>(field + " (length)");
        if (count > Limits::kMaxArrayLength)
            throw Error(r.source(), field,
                        "array length " + str(count) + " exceeds the limit of " +
                            str(Limits::kMaxArrayLength) + " (kMaxArrayLength)");
        const uint64_t minBytes = scalarBytes(v.elementType);
        if (count > r.left() / minBytes)
            throw Error(r.source(), field,
                        "array length " + str(count) + " of " + ggufValueTypeName(v.elementType) +
                            " cannot fit in the " + str(r.left()) + " bytes left in the file");
        v.array.reserve(size_t(count));
        for (uint64_t k = 0; k < count; ++k)
            v.array.push_back(readValue(r, v.elementType, field + "[" + str(k) + "]", depth + 1));
        break;
    }
    }
    return v;
}

uint64_t checkedRowBytes(const GgufTensorInfo& t, const GgmlTypeTraits& traits,
                         const std::string& source) {
    const std::string field = t.name + ".dims";
    if (t.dims[0] % traits.blockSize != 0)
        throw Error(source, field,
                    "row length ne0 = " + str(uint64_t(t.dims[0])) + " is not a multiple of " +
                        traits.name + "'s block of " + str(uint64_t(traits.blockSize)));
    uint64_t bytes = uint64_t(t.dims[0] / traits.blockSize);
    if (__builtin_mul_overflow(bytes, traits.blockBytes, &bytes))
        throw Error(source, field, "row byte size overflows 64 bits");
    for (size_t d = 1; d < t.dims.size(); ++d)
        if (__builtin_mul_overflow(bytes, uint64_t(t.dims[d]), &bytes))
            throw Error(source, field, "byte size overflows 64 bits");
    return bytes;
}

} // namespace

const char* ggufValueTypeName(GgufValueType type) {
    static const char* names[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                  "int32",  "float32", "bool",   "string", "array",
                                  "uint64", "int64",   "float64"};
    const uint32_t i = uint32_t(type);
    return i < sizeof names / sizeof *names ? names[i] : "unknown";
}

bool GgufValue::isInteger() const {
    switch (type) {
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
    case GgufValueType::I8:
    case GgufValueType::I16:
    case GgufValueType::I32:
    case GgufValueType::I64:
        return true;
    default:
        return false;
    }
}

uint64_t GgufValue::toUnsigned(const std::string& source, const std::string& key) const {
    switch (type) {
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
        return u;
    case GgufValueType::I8:
    case GgufValueType::I16:
    case GgufValueType::I32:
    case GgufValueType::I64:
        if (i < 0)
            throw Error(source, key, "negative value " + std::to_string(i));
        return uint64_t(i);
    default:
        throw Error(source, key,
                    std::string("expected an integer, got ") + ggufValueTypeName(type));
    }
}

double GgufValue::toNumber(const std::string& source, const std::string& key) const {
    if (type == GgufValueType::F32 || type == GgufValueType::F64)
        return f;
    if (isInteger())
        return u ? double(u) : double(i);
    throw Error(source, key, std::string("expected a number, got ") + ggufValueTypeName(type));
}

int64_t GgufTensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    return n;
}

const GgufValue* GgufHeader::find(const std::string& key) const {
    const auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
}

GgufHeader parseGgufHeader(const uint8_t* data, uint64_t size, const std::string& source) {
    Reader r(data, size, source);
    r.need(4, "magic");
    if (std::memcmp(data, "GGUF", 4) != 0)
        throw Error(source, "magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
    r.read<uint32_t>("magic");
    GgufHeader h;
    h.version = r.read<uint32_t>("version");
    if (h.version != 2 && h.version != 3)
        throw Error(source, "version",
                    "GGUF version " + str(h.version) +
                        " is not read (2 and 3 are; 1 is obsolete; a byte-swapped number means "
                        "a big-endian file)");
    const uint64_t tensorCount = r.read<uint64_t>("tensor_count");
    const uint64_t kvCount = r.read<uint64_t>("metadata_kv_count");
    if (tensorCount > Limits::kMaxTensorCount)
        throw Error(source, "tensor_count",
                    str(tensorCount) + " exceeds the limit of " + str(Limits::kMaxTensorCount) +
                        " (kMaxTensorCount)");
    if (kvCount > Limits::kMaxKvCount)
        throw Error(source, "metadata_kv_count",
                    str(kvCount) + " exceeds the limit of " + str(Limits::kMaxKvCount) +
                        " (kMaxKvCount)");
    if (kvCount > r.left() / kMinKvBytes)
        throw Error(source, "metadata_kv_count",
                    str(kvCount) + " entries cannot fit in the " + str(r.left()) +
                        " bytes left in the file");

    for (uint64_t k = 0; k < kvCount; ++k) {
        const std::string key = r.string("metadata[" + str(k) + "].key");
        const std::string field = key.empty() ? "metadata[" + str(k) + "]" : key;
        if (key.empty())
            throw Error(source, field, "empty metadata key");
        if (h.metadata.count(key))
            throw Error(source, field, "duplicate metadata key");
        const GgufValueType type = valueType(r.read<uint32_t>(field + " (type)"), source, field);
        h.metadata.emplace(key, readValue(r, type, field, 0));
        h.keyOrder.push_back(key);
    }

    if (const GgufValue* a = h.find("general.alignment")) {
        if (a->type != GgufValueType::U32)
            throw Error(source, "general.alignment",
                        std::string("must be a uint32, got ") + ggufValueTypeName(a->type));
        if (a->u == 0 || (a->u & (a->u - 1)) != 0)
            throw Error(source, "general.alignment",
                        str(a->u) + " is not a power of two (ggml requires one)");
        h.alignment = a->u;
    }

    if (tensorCount > r.left() / kMinTensorInfoBytes)
        throw Error(source, "tensor_count",
                    str(tensorCount) + " tensor infos cannot fit in the " + str(r.left()) +
                        " bytes left in the file");
    h.tensors.reserve(size_t(tensorCount));
    std::unordered_set<std::string> names;
    for (uint64_t k = 0; k < tensorCount; ++k) {
        GgufTensorInfo t;
        const std::string slot = "tensor_infos[" + str(k) + "]";
        t.name = r.string(slot + ".name");
        if (t.name.empty())
            throw Error(source, slot + ".name", "empty tensor name");
        if (t.name.size() > Limits::kMaxNameBytes)
            throw Error(source, slot + ".name",
                        "name of " + str(t.name.size()) + " bytes exceeds the limit of " +
                            str(Limits::kMaxNameBytes) + " (kMaxNameBytes, as ggml)");
        if (!names.insert(t.name).second)
            throw Error(source, t.name, "duplicate tensor name");
        const uint32_t nDims = r.read<uint32_t>(t.name + ".n_dims");
        if (nDims == 0 || nDims > Limits::kMaxDims)
            throw Error(source, t.name + ".n_dims",
                        str(nDims) + " dimensions: must be 1 to " + str(Limits::kMaxDims) +
                            " (kMaxDims)");
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nDims; ++d) {
            const std::string field = t.name + ".dims[" + str(d) + "]";
            const uint64_t dim = r.read<uint64_t>(field);
            if (dim == 0 || dim > uint64_t(std::numeric_limits<int64_t>::max()))
                throw Error(source, field, "dimension " + str(dim) + " is not in [1, 2^63)");
            if (__builtin_mul_overflow(numel, dim, &numel) ||
                numel > uint64_t(std::numeric_limits<int64_t>::max()))
                throw Error(source, t.name + ".dims", "element count overflows 63 bits");
            t.dims.push_back(int64_t(dim));
        }
        t.type = r.read<uint32_t>(t.name + ".type");
        const GgmlTypeTraits& traits = ggmlTypeTraits(t.type);
        if (traits.blockSize == 0)
            throw Error(source, t.name + ".type", "ggml type " + str(t.type) + " is unknown");
        t.byteSize = checkedRowBytes(t, traits, source);
        t.offset = r.read<uint64_t>(t.name + ".offset");
        if (t.offset % h.alignment != 0)
            throw Error(source, t.name + ".offset",
                        str(t.offset) + " is not a multiple of the alignment " + str(h.alignment));
        h.tensors.push_back(std::move(t));
    }

    // The data section starts at the end of the header, rounded up to the alignment.
    const uint64_t end = r.pos();
    h.dataOffset = end + (h.alignment - end % h.alignment) % h.alignment;
    if (h.dataOffset < end || h.dataOffset > size) {
        if (!h.tensors.empty())
            throw Error(source, "data section",
                        "starts at " + str(h.dataOffset) + ", past the end of the " + str(size) +
                            "-byte file");
        h.dataOffset = size; // no tensors: nothing follows the header
    }
    const uint64_t dataBytes = size - h.dataOffset;
    std::vector<const GgufTensorInfo*> byOffset;
    byOffset.reserve(h.tensors.size());
    for (const GgufTensorInfo& t : h.tensors) {
        if (t.offset > dataBytes || t.byteSize > dataBytes - t.offset)
            throw Error(source, t.name + ".offset",
                        "[" + str(t.offset) + ", +" + str(t.byteSize) +
                            ") lies outside the data section of " + str(dataBytes) + " bytes");
        byOffset.push_back(&t);
    }
    std::sort(
        byOffset.begin(), byOffset.end(),
        [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < byOffset.size(); ++k) {
        const GgufTensorInfo& prev = *byOffset[k - 1];
        if (byOffset[k]->offset < prev.offset + prev.byteSize)
            throw Error(source, byOffset[k]->name + ".offset",
                        str(byOffset[k]->offset) + " overlaps tensor '" + prev.name +
                            "' which spans [" + str(prev.offset) + ", " +
                            str(prev.offset + prev.byteSize) + ")");
    }
    return h;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    std::unique_ptr<GgufFile> file(new GgufFile);
    file->m_path = path;
    file->m_file.setFileName(QString::fromStdString(path));
    if (QFileInfo(file->m_file.fileName()).isDir())
        throw Error(path, "", "is a directory, not a GGUF file");
    if (!file->m_file.open(QIODevice::ReadOnly))
        throw Error(path, "", "cannot open: " + file->m_file.errorString().toStdString());
    const qint64 size = file->m_file.size();
    if (size < 24)
        throw Error(path, "", "file is " + str(uint64_t(size)) + " bytes, too short for GGUF");
    file->m_size = uint64_t(size);
    file->m_map = file->m_file.map(0, size);
    if (!file->m_map)
        throw Error(path, "", "cannot map: " + file->m_file.errorString().toStdString());
    file->m_header = parseGgufHeader(file->m_map, file->m_size, path);
    for (size_t k = 0; k < file->m_header.tensors.size(); ++k)
        file->m_index.emplace(file->m_header.tensors[k].name, k);
    return file;
}

GgufFile::~GgufFile() {
    if (m_map)
        m_file.unmap(const_cast<uint8_t*>(m_map));
}

const GgufTensorInfo* GgufFile::find(const std::string& name) const {
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_header.tensors[it->second];
}

const uint8_t* GgufFile::data(const GgufTensorInfo& info) const {
    const uint64_t dataBytes = m_size - m_header.dataOffset;
    if (info.offset > dataBytes || info.byteSize > dataBytes - info.offset)
        throw Error(m_path, info.name, "byte range lies outside this file's data section");
    return m_map + m_header.dataOffset + info.offset;
}

std::vector<float> GgufFile::dequantize(const GgufTensorInfo& info) const {
    if (!ggmlCanDequantize(info.type))
        throw Error(m_path, info.name, "ggml " + ggmlTypeLabel(info.type) + " not supported");
    const uint8_t* src = data(info);
    const int64_t rowLength = info.dims[0];
    const int64_t rows = info.numel() / rowLength;
    const uint64_t rowBytes = info.byteSize / uint64_t(rows);
    std::vector<float> out(size_t(info.numel()));
    for (int64_t row = 0; row < rows; ++row)
        ggmlDequantizeRow(src + uint64_t(row) * rowBytes, out.data() + row * rowLength, rowLength,
                          GgmlType(info.type));
    return out;
}

} // namespace qs
