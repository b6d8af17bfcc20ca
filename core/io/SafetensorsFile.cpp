#include "io/SafetensorsFile.h"

#include <sys/mman.h>
#include <unistd.h>

#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QFileInfo>
#include <QRandomGenerator>
#include <QString>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <unistd.h>

namespace qs {

namespace {

using Json = nlohmann::json;

// Same cap as the reference reader (safetensors' MAX_HEADER_SIZE): a larger header length is a
// corrupt or hostile file, never a real checkpoint.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kMaxRank = 8;
// { "name": { "shape": [ ... ] } } is three containers deep; anything deeper is not a header.
constexpr size_t kMaxJsonDepth = 3;
const char* const kMetadataKey = "__metadata__";

std::string tensorField(const std::string& tensor, const std::string& field) {
    return field.empty() ? tensor : tensor + "." + field;
}

std::string jsonTypeName(const Json& value) {
    if (value.is_number_float())
        return "number " + value.dump();
    if (value.is_number_integer() || value.is_number_unsigned())
        return "integer " + value.dump();
    if (value.is_string())
        return "string " + value.dump();
    return value.type_name();
}

// Byte size of a tensor, computed with checked arithmetic: shapes come from untrusted headers,
// so every product can overflow.
uint64_t checkedByteSize(const std::string& source, const std::string& tensor, DType dtype,
                         const std::vector<int64_t>& shape) {
    if (shape.size() > kMaxRank)
        throw Error(source, tensorField(tensor, "shape"),
                    "rank " + std::to_string(shape.size()) + " exceeds the maximum of " +
                        std::to_string(kMaxRank));
    uint64_t numel = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0)
            throw Error(source, tensorField(tensor, "shape[" + std::to_string(i) + "]"),
                        "negative dimension " + std::to_string(shape[i]));
        if (__builtin_mul_overflow(numel, uint64_t(shape[i]), &numel) ||
            numel > uint64_t(std::numeric_limits<int64_t>::max()))
            throw Error(source, tensorField(tensor, "shape"), "element count overflows 63 bits");
    }
    uint64_t bits = 0;
    if (__builtin_mul_overflow(numel, uint64_t(dtypeBits(dtype)), &bits))
        throw Error(source, tensorField(tensor, "shape"),
                    "byte size overflows 64 bits (" + std::to_string(numel) + " elements of " +
                        dtypeName(dtype) + ")");
    if (bits % 8 != 0)
        throw Error(source, tensorField(tensor, "shape"),
                    "odd element count " + std::to_string(numel) + " for " + dtypeName(dtype) +
                        ", which packs two elements per byte");
    return bits / 8;
}

// Parser callback that enforces what nlohmann accepts silently: duplicate keys (the last one
// would win) and nesting deeper than any header can be (a bomb of '[' would only waste memory).
class HeaderShapeGuard {
public:
    explicit HeaderShapeGuard(const std::string& source) : m_source(source) {}

    bool operator()(int, Json::parse_event_t event, Json& parsed) {
        switch (event) {
        case Json::parse_event_t::object_start:
        case Json::parse_event_t::array_start:
            if (m_frames.size() >= kMaxJsonDepth)
                throw Error(m_source, path(),
                            "header JSON nests deeper than the " + std::to_string(kMaxJsonDepth) +
                                " levels a safetensors header has");
            m_frames.push_back({event == Json::parse_event_t::object_start, {}, {}});
            break;
        case Json::parse_event_t::object_end:
        case Json::parse_event_t::array_end:
            if (!m_frames.empty())
                m_frames.pop_back();
            break;
        case Json::parse_event_t::key:
            if (!m_frames.empty() && parsed.is_string()) {
                Frame& frame = m_frames.back();
                frame.lastKey = parsed.get<std::string>();
                if (!frame.keys.insert(frame.lastKey).second)
                    throw Error(m_source, path(), "duplicate key in header JSON");
            }
            break;
        case Json::parse_event_t::value:
            break;
        }
        return true;
    }

private:
    struct Frame {
        bool isObject;
        std::unordered_set<std::string> keys;
        std::string lastKey;
    };

    std::string path() const {
        std::string result;
        for (const Frame& frame : m_frames) {
            if (!frame.isObject)
                continue;
            result += (result.empty() ? "" : ".") + frame.lastKey;
        }
        return result.empty() ? "header" : result;
    }

    const std::string& m_source;
    std::vector<Frame> m_frames;
};

Json parseHeaderJson(const char* begin, const char* end, const std::string& source) {
    // The reference reader demands the header start with '{' (no BOM, no leading whitespace).
    if (begin == end || *begin != '{')
        throw Error(source, "header", "header JSON must be an object starting with '{'");
    // nlohmann's lexer takes a NUL byte for the end of input and would ignore what follows.
    if (const void* nul = std::memchr(begin, '\0', size_t(end - begin)))
        throw Error(source, "header",
                    "invalid JSON: NUL byte at header offset " +
                        std::to_string(static_cast<const char*>(nul) - begin));
    HeaderShapeGuard guard(source);
    try {
        return Json::parse(begin, end, std::ref(guard), /*allow_exceptions=*/true,
                           /*ignore_comments=*/false);
    } catch (const Json::exception& e) {
        // nlohmann's messages name the byte position and, for bad UTF-8, say so.
        throw Error(source, "header", std::string("invalid JSON: ") + e.what());
    }
}

std::map<std::string, std::string> parseMetadata(const Json& value, const std::string& source) {
    if (!value.is_object())
        throw Error(source, kMetadataKey,
                    "must be an object of string to string, got " + jsonTypeName(value));
    std::map<std::string, std::string> metadata;
    for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it.value().is_string())
            throw Error(source, std::string(kMetadataKey) + "." + it.key(),
                        "metadata values must be strings, got " + jsonTypeName(it.value()));
        metadata.emplace(it.key(), it.value().get<std::string>());
    }
    return metadata;
}

uint64_t parseUnsigned(const Json& value, const std::string& source, const std::string& field,
                       const char* what) {
    // nlohmann stores non-negative integers as unsigned, negatives as signed, and anything with
    // a fraction, an exponent or beyond 64 bits as float: only the first kind is acceptable.
    if (!value.is_number_unsigned())
        throw Error(source, field,
                    std::string(what) + " must be a non-negative integer, got " +
                        jsonTypeName(value));
    return value.get<uint64_t>();
}

TensorInfo parseTensorEntry(const std::string& name, const Json& entry, const std::string& source) {
    if (name.empty())
        throw Error(source, "header", "empty tensor name");
    if (!entry.is_object())
        throw Error(source, name, "tensor entry must be a JSON object, got " + jsonTypeName(entry));
    for (auto it = entry.begin(); it != entry.end(); ++it)
        if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
            throw Error(source, tensorField(name, it.key()), "unknown key in tensor entry");

    TensorInfo info;
    info.name = name;

    const auto dtypeIt = entry.find("dtype");
    if (dtypeIt == entry.end())
        throw Error(source, tensorField(name, "dtype"), "missing required key");
    if (!dtypeIt->is_string())
        throw Error(source, tensorField(name, "dtype"),
                    "must be a string, got " + jsonTypeName(*dtypeIt));
    const std::string dtypeText = dtypeIt->get<std::string>();
    const std::optional<DType> dtype = dtypeFromName(dtypeText);
    if (!dtype)
        throw Error(source, tensorField(name, "dtype"), "unknown dtype '" + dtypeText + "'");
    info.dtype = *dtype;

    const auto shapeIt = entry.find("shape");
    if (shapeIt == entry.end())
        throw Error(source, tensorField(name, "shape"), "missing required key");
    if (!shapeIt->is_array())
        throw Error(source, tensorField(name, "shape"),
                    "must be an array, got " + jsonTypeName(*shapeIt));
    if (shapeIt->size() > kMaxRank)
        throw Error(source, tensorField(name, "shape"),
                    "rank " + std::to_string(shapeIt->size()) + " exceeds the maximum of " +
                        std::to_string(kMaxRank));
    for (size_t i = 0; i < shapeIt->size(); ++i) {
        const Json& dim = (*shapeIt)[i];
        const std::string field = tensorField(name, "shape[" + std::to_string(i) + "]");
        if (dim.is_number_integer() && !dim.is_number_unsigned())
            throw Error(source, field, "negative dimension " + dim.dump());
        const uint64_t value = parseUnsigned(dim, source, field, "dimension");
        if (value > uint64_t(std::numeric_limits<int64_t>::max()))
            throw Error(source, field, "dimension " + std::to_string(value) + " exceeds 63 bits");
        info.shape.push_back(int64_t(value));
    }
    const uint64_t expectedBytes = checkedByteSize(source, name, info.dtype, info.shape);

    const auto offsetsIt = entry.find("data_offsets");
    const std::string offsetsField = tensorField(name, "data_offsets");
    if (offsetsIt == entry.end())
        throw Error(source, offsetsField, "missing required key");
    if (!offsetsIt->is_array() || offsetsIt->size() != 2)
        throw Error(source, offsetsField,
                    "must be an array of two integers [begin, end], got " +
                        jsonTypeName(*offsetsIt));
    info.begin = parseUnsigned((*offsetsIt)[0], source, offsetsField, "begin offset");
    info.end = parseUnsigned((*offsetsIt)[1], source, offsetsField, "end offset");
    if (info.end < info.begin)
        throw Error(source, offsetsField,
                    "end " + std::to_string(info.end) + " is before begin " +
                        std::to_string(info.begin));
    if (info.end - info.begin != expectedBytes)
        throw Error(source, offsetsField,
                    "spans " + std::to_string(info.end - info.begin) + " bytes but shape " +
                        Json(info.shape).dump() + " of " + dtypeText + " needs " +
                        std::to_string(expectedBytes));
    return info;
}

// Offsets must tile the data section exactly: sorted by begin, the first starts at 0, each
// starts where the previous ends, the last ends at the end of the file. JSON key order carries
// no meaning (as in the reference), so the check runs on the sorted list.
void checkTiling(std::vector<TensorInfo>& tensors, uint64_t dataBytes, const std::string& source) {
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        if (a.begin != b.begin)
            return a.begin < b.begin;
        return a.end != b.end ? a.end < b.end : a.name < b.name; // zero-size ties: by name
    });
    uint64_t cursor = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        const std::string field = tensorField(t.name, "data_offsets");
        if (i == 0 && t.begin != 0)
            throw Error(source, field,
                        "first tensor must begin at offset 0, begins at " +
                            std::to_string(t.begin) + " (gap at the start of the data)");
        if (t.begin < cursor)
            throw Error(source, field,
                        "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                            ") overlaps tensor '" + tensors[i - 1].name + "' which ends at " +
                            std::to_string(cursor));
        if (t.begin > cursor)
            throw Error(source, field,
                        "leaves a gap of " + std::to_string(t.begin - cursor) +
                            " bytes after tensor '" + tensors[i - 1].name + "'");
        cursor = t.end;
    }
    if (cursor != dataBytes) {
        if (tensors.empty())
            throw Error(source, "header",
                        "no tensors, but " + std::to_string(dataBytes) +
                            " data bytes follow the header");
        // Short data is what an interrupted download or copy leaves: say so in plain words.
        throw Error(source, tensorField(tensors.back().name, "data_offsets"),
                    std::string(cursor > dataBytes ? "file truncated: " : "") +
                        "last tensor ends at " + std::to_string(cursor) + " but the data section " +
                        "holds " + std::to_string(dataBytes) + " bytes (file size - 8 - header " +
                        "length)" +
                        (cursor > dataBytes
                             ? "; " + std::to_string(cursor - dataBytes) + " bytes are missing"
                             : std::string()));
    }
}

} // namespace

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

SafetensorsHeader parseSafetensorsHeader(const uint8_t* data, uint64_t size,
                                         const std::string& source) {
    if (size < 8)
        throw Error(source, "",
                    "file is " + std::to_string(size) +
                        " bytes, shorter than the 8-byte header length");
    uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i)
        headerBytes = (headerBytes << 8) | data[i];
    if (headerBytes > kMaxHeaderBytes)
        throw Error(source, "header length",
                    std::to_string(headerBytes) + " bytes is absurd (limit " +
                        std::to_string(kMaxHeaderBytes) + ")");
    if (headerBytes > size - 8)
        throw Error(source, "header length",
                    std::to_string(headerBytes) + " bytes exceeds the file (" +
                        std::to_string(size - 8) +
                        " bytes after the length): the file is truncated or not safetensors");

    const char* jsonBegin = reinterpret_cast<const char*>(data + 8);
    const Json root = parseHeaderJson(jsonBegin, jsonBegin + headerBytes, source);
    if (!root.is_object())
        throw Error(source, "header", "header JSON must be an object, got " + jsonTypeName(root));

    SafetensorsHeader header;
    header.dataOffset = 8 + headerBytes;
    header.tensors.reserve(root.size());
    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == kMetadataKey)
            header.metadata = parseMetadata(it.value(), source);
        else
            header.tensors.push_back(parseTensorEntry(it.key(), it.value(), source));
    }
    checkTiling(header.tensors, size - header.dataOffset, source);
    return header;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    std::unique_ptr<SafetensorsFile> file(new SafetensorsFile);
    file->m_path = path;
    file->m_file.setFileName(QString::fromStdString(path));
    if (QFileInfo(file->m_file.fileName()).isDir())
        throw Error(path, "", "is a directory, not a safetensors file");
    if (!file->m_file.open(QIODevice::ReadOnly))
        throw Error(path, "", "cannot open: " + file->m_file.errorString().toStdString());
    const qint64 size = file->m_file.size();
    if (size < 8)
        throw Error(path, "",
                    "file is " + std::to_string(size) +
                        " bytes, shorter than the 8-byte header length");
    file->m_size = uint64_t(size);
    // One mapping of the whole file: pages are only read when a tensor's bytes are touched.
    file->m_map = file->m_file.map(0, size);
    if (!file->m_map)
        throw Error(path, "", "cannot map: " + file->m_file.errorString().toStdString());
    file->m_header = parseSafetensorsHeader(file->m_map, file->m_size, path);
    file->m_index.reserve(file->m_header.tensors.size());
    for (size_t i = 0; i < file->m_header.tensors.size(); ++i)
        file->m_index.emplace(file->m_header.tensors[i].name, i);
    return file;
}

SafetensorsFile::~SafetensorsFile() {
    if (m_map)
        m_file.unmap(const_cast<uint8_t*>(m_map));
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_header.tensors[it->second];
}

const uint8_t* SafetensorsFile::data(const TensorInfo& info) const {
    // A TensorInfo from another file would point anywhere; the header already guarantees ours fit.
    const uint64_t dataBytes = m_size - m_header.dataOffset;
    if (info.end < info.begin || info.end > dataBytes)
        throw Error(m_path, info.name, "byte range lies outside this file's data section");
    return m_map + m_header.dataOffset + info.begin;
}

// ---------------------------------------------------------------------------------------------

void writeSafetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<TensorInfo> layout;
    layout.reserve(tensors.size());
    for (const TensorBlob& blob : tensors) {
        TensorInfo info;
        info.name = blob.name;
        info.dtype = blob.dtype;
        info.shape = blob.shape;
        layout.push_back(std::move(info));
    }
    SafetensorsWriter writer(path, std::move(layout), metadata);
    for (const TensorBlob& blob : tensors)
        writer.writeNext(blob.bytes.data(), blob.bytes.size());
    writer.commit();
}

std::string safetensorsHeaderText(const std::string& path, std::vector<TensorInfo>& layout,
                                  const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    // The reference writer puts __metadata__ first and omits it when empty.
    if (!metadata.empty())
        header[kMetadataKey] = metadata;
    std::unordered_set<std::string> names;
    uint64_t offset = 0;
    for (TensorInfo& info : layout) {
        if (info.name.empty() || info.name == kMetadataKey)
            throw Error(path, info.name.empty() ? "header" : info.name, "not a valid tensor name");
        if (!names.insert(info.name).second)
            throw Error(path, info.name, "duplicate tensor name");
        const uint64_t bytes = checkedByteSize(path, info.name, info.dtype, info.shape);
        info.begin = offset;
        if (__builtin_add_overflow(offset, bytes, &info.end))
            throw Error(path, info.name, "data section size overflows 64 bits");
        offset = info.end;
        header[info.name] = {{"dtype", dtypeName(info.dtype)},
                             {"shape", info.shape},
                             {"data_offsets", {info.begin, info.end}}};
    }

    std::string text;
    try {
        text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
    } catch (const nlohmann::ordered_json::exception& e) {
        throw Error(path, "header", std::string("cannot encode header: ") + e.what());
    }
    // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

SafetensorsWriter::SafetensorsWriter(const std::string& path, std::vector<TensorInfo> layout,
                                     const std::map<std::string, std::string>& metadata)
    : m_path(path), m_layout(std::move(layout)) {
    const std::string text = safetensorsHeaderText(path, m_layout, metadata);
    m_dataOffset = 8 + text.size();

    // A random suffix keeps concurrent writers of the same target apart; NewOnly refuses to
    // reuse (and later delete) a file someone else created under that name.
    m_tempPath = path + ".tmp-" +
                 QString::number(QRandomGenerator::global()->generate64(), 16).toStdString();
    m_file.setFileName(QString::fromStdString(m_tempPath));
    if (!m_file.open(QIODevice::WriteOnly | QIODevice::NewOnly | QIODevice::Unbuffered))
        throw Error(path, "",
                    "cannot create " + m_tempPath + ": " + m_file.errorString().toStdString());
    try {
        uint8_t length[8];
        for (int i = 0; i < 8; ++i)
            length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
        if (m_file.write(reinterpret_cast<const char*>(length), 8) != 8 ||
            m_file.write(text.data(), qint64(text.size())) != qint64(text.size()))
            throw Error(path, "", "write failed: " + m_file.errorString().toStdString());
    } catch (...) {
        // The destructor does not run for a throwing constructor: clean up here.
        m_file.close();
        m_file.remove();
        throw;
    }
}

SafetensorsWriter::~SafetensorsWriter() {
    // The constructor created the temp file (or threw); anything short of a commit removes it,
    // including a commit whose rename failed after the file was closed.
    if (!m_committed) {
        m_file.close();
        QFile::remove(QString::fromStdString(m_tempPath));
    }
}

std::string SafetensorsWriter::nextName() const {
    return m_next < m_layout.size() ? m_layout[m_next].name : std::string();
}

void SafetensorsWriter::writeNext(const void* bytes, uint64_t size) {
    if (m_committed || m_next >= m_layout.size())
        throw Error(m_path, "", "all tensors are already written");
    const TensorInfo& info = m_layout[m_next];
    if (size != info.byteSize())
        throw Error(m_path, info.name,
                    "got " + std::to_string(size) + " bytes, the layout needs " +
                        std::to_string(info.byteSize()));
    // QFile::write takes a qint64; write in chunks well below that so any size works.
    const char* p = static_cast<const char*>(bytes);
    uint64_t left = size;
    while (left > 0) {
        const qint64 chunk = qint64(std::min<uint64_t>(left, uint64_t(1) << 30));
        const qint64 written = m_file.write(p, chunk);
        if (written <= 0)
            throw Error(m_path, info.name, "write failed: " + m_file.errorString().toStdString());
        p += written;
        left -= uint64_t(written);
    }
    ++m_next;
}

void SafetensorsWriter::skipNext() {
    if (m_committed || m_next >= m_layout.size())
        throw Error(m_path, "", "all tensors are already written");
    const TensorInfo& info = m_layout[m_next];
    // Seeking past the end and writing later leaves a hole the file system reads back as zeros.
    if (!m_file.seek(qint64(m_dataOffset + info.end)))
        throw Error(m_path, info.name, "seek failed: " + m_file.errorString().toStdString());
    ++m_next;
}

void SafetensorsWriter::commit() {
    if (m_committed)
        throw Error(m_path, "", "already committed");
    if (m_next < m_layout.size())
        throw Error(m_path, m_layout[m_next].name,
                    "commit before all tensors were written (" + std::to_string(m_next) + " of " +
                        std::to_string(m_layout.size()) + ")");
    const uint64_t total = m_dataOffset + (m_layout.empty() ? 0 : m_layout.back().end);
    // A skipped last tensor only moved the position: extend the file (sparsely) to its size.
    if (uint64_t(m_file.size()) < total && !m_file.resize(qint64(total)))
        throw Error(m_path, "", "cannot extend file: " + m_file.errorString().toStdString());
    if (!m_file.flush() || ::fsync(m_file.handle()) != 0)
        throw Error(m_path, "", "cannot flush to disk: " + m_file.errorString().toStdString());
    m_file.close();
    if (std::rename(m_tempPath.c_str(), m_path.c_str()) != 0)
        throw Error(m_path, "",
                    "cannot rename " + m_tempPath + " into place: " + std::strerror(errno));
    m_committed = true;
}

void SafetensorsFile::releasePages(const TensorInfo& info) const {
    if (!m_map)
        return;
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    const uint64_t begin = m_header.dataOffset + info.begin;
    const uint64_t end = m_header.dataOffset + info.end;
    // Only whole pages inside the tensor: its neighbours may still be in use.
    const uint64_t first = (begin + page - 1) / page * page;
    const uint64_t last = end / page * page;
    if (last > first)
        madvise(const_cast<uint8_t*>(m_map) + first, size_t(last - first), MADV_DONTNEED);
}

} // namespace qs
