#pragma once

#include "io/DType.h"

#include <QFile>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs {

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0; // byte offsets relative to the start of the data section
    uint64_t end = 0;
    int64_t numel() const;
    uint64_t byteSize() const { return end - begin; }
};

// The parsed, validated header of a safetensors file.
struct SafetensorsHeader {
    std::vector<TensorInfo> tensors; // in data-offset order
    std::map<std::string, std::string> metadata;
    uint64_t dataOffset = 0; // 8 + header length
};

// Parses and validates a complete safetensors file image (`size` bytes at `data`): header length
// within the file and at most 100 MB, a UTF-8 JSON object starting with '{' (no duplicate keys, no
// NUL bytes), entries with exactly dtype/shape/data_offsets, known dtypes, shapes of rank <= 8
// with non-negative integer dims, each tensor's byte size equal to numel × itemsize (checked
// arithmetic; F4 needs an even numel), offsets that, sorted by begin (JSON key order carries no
// meaning), are contiguous from 0 with no overlap or gap and end exactly at the end of the file,
// and __metadata__ an object of string to string. Only the first 8 + header-length bytes are
// read. Throws qs::Error with `source` (the path) and the offending tensor/field. The fuzz target
// drives this function.
SafetensorsHeader parseSafetensorsHeader(const uint8_t* data, uint64_t size,
                                         const std::string& source);

// A strict, lazy reader: open() maps the file and validates the header; tensor bytes are only
// touched when asked for.
class SafetensorsFile {
public:
    static std::unique_ptr<SafetensorsFile> open(const std::string& path);
    ~SafetensorsFile();

    const std::string& path() const { return m_path; }
    const SafetensorsHeader& header() const { return m_header; }
    const TensorInfo* find(const std::string& name) const; // nullptr when absent
    // Pointer to the tensor's bytes inside the mapping (valid while this object lives).
    const uint8_t* data(const TensorInfo& info) const;
    // Drops the mapped pages of a tensor that has been copied out, so they stop counting in the
    // process's resident memory (streaming a model block by block keeps RSS flat). Reading the
    // tensor again simply faults the pages back in from the page cache.
    void releasePages(const TensorInfo& info) const;
    uint64_t fileSize() const { return m_size; }

private:
    SafetensorsFile() = default;
    std::string m_path;
    QFile m_file;
    const uint8_t* m_map = nullptr;
    uint64_t m_size = 0;
    SafetensorsHeader m_header;
    std::unordered_map<std::string, size_t> m_index; // name -> index in m_header.tensors
};

// One tensor to write: raw little-endian bytes of `dtype`.
struct TensorBlob {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::string bytes;
};

// Writes a safetensors file atomically (temp name + rename); tensors are written in the given
// order, header padded with spaces to a multiple of 8 bytes as the reference writer does.
void writeSafetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The JSON header SafetensorsWriter writes for `layout` (names, dtypes, shapes in file order;
// fills in each begin/end), padded with spaces to a multiple of 8 bytes: the file is 8 bytes of
// length, this text, then the data. Throws qs::Error naming `path` and the tensor.
std::string safetensorsHeaderText(const std::string& path, std::vector<TensorInfo>& layout,
                                  const std::map<std::string, std::string>& metadata = {});

// Streaming writer for checkpoints larger than memory. The layout (names, dtypes, shapes, in file
// order) is fixed up front; tensor bytes then follow one by one. Everything goes to a temporary
// file beside `path` that commit() renames into place; destroying the writer without commit()
// removes it, so a failure never leaves a half-written file.
class SafetensorsWriter {
public:
    SafetensorsWriter(const std::string& path, std::vector<TensorInfo> layout,
                      const std::map<std::string, std::string>& metadata = {});
    ~SafetensorsWriter();
    SafetensorsWriter(const SafetensorsWriter&) = delete;
    SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

    // Bytes of the next tensor in layout order; `size` must equal its byte size.
    void writeNext(const void* bytes, uint64_t size);
    // Leaves the next tensor as a hole that reads back as zeros (a sparse file on Linux): lets
    // benchmarks write 70B-shaped checkpoints in seconds.
    void skipNext();
    // Name of the next tensor to write, empty when all are written.
    std::string nextName() const;
    void commit();

private:
    std::string m_path;
    std::string m_tempPath;
    std::vector<TensorInfo> m_layout; // offsets filled in
    size_t m_next = 0;
    uint64_t m_dataOffset = 0;
    QFile m_file;
    bool m_committed = false;
};

} // namespace qs
