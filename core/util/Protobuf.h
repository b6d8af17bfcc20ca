// The protobuf wire format, by hand: little-endian base-128 varints, fixed32 and length-delimited
// fields keyed by (field number << 3 | wire type). Quantscope writes and reads a few protobuf
// messages (ONNX's ModelProto, sentencepiece's ModelProto) and links no protobuf library: Debian's
// libsentencepiece carries its own protobuf, which crashes beside LibTorch's (README), and the
// messages are small. The message schemas live with their users (export/OnnxProto.h,
// io/GgufTokenizer.cpp, export/GgufExporter.cpp); this file knows only the wire format.
#pragma once

#include <cstdint>
#include <string>

namespace qs {

// Serialises one message field by field, in the order the calls come.
class ProtoWriter {
public:
    void varint(uint32_t field, uint64_t value);
    void fixed32(uint32_t field, uint32_t bits);
    void bytes(uint32_t field, const std::string& data);
    void message(uint32_t field, const ProtoWriter& m) { bytes(field, m.data()); }
    const std::string& data() const { return m_data; }

    // The key and length of a length-delimited field whose payload follows separately (a large
    // payload streamed from a spool file).
    static std::string lengthPrefix(uint32_t field, uint64_t length);

private:
    std::string m_data;
};

// Reads one serialised message field by field. Every read is checked against the bytes left;
// a truncated or malformed message throws qs::Error naming `source` (and the field asked for,
// where the caller names one).
class ProtoReader {
public:
    ProtoReader(const std::string& data, std::string source);

    bool atEnd() const { return m_pos >= m_data.size(); }
    // The next field's key: its number and wire type (0 varint, 1 fixed64, 2 length-delimited,
    // 5 fixed32).
    struct Key {
        uint32_t field = 0;
        uint32_t wire = 0;
    };
    Key key();
    uint64_t varint();
    uint32_t fixed32(const std::string& field);
    // A length-delimited payload (a string, bytes or a sub-message).
    std::string bytes(const std::string& field);
    // Skips a field of wire type `wire` whose key was just read.
    void skip(uint32_t wire);

private:
    const std::string& m_data;
    std::string m_source;
    size_t m_pos = 0;
};

} // namespace qs
