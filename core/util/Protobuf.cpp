#include "util/Protobuf.h"

#include "util/Error.h"

#include <utility>

namespace qs {

namespace {

void putVarint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(char(uint8_t(v) | 0x80));
        v >>= 7;
    }
    out.push_back(char(v));
}

// Field keys: (field number << 3) | wire type (0 varint, 2 length-delimited, 5 fixed32).
void putKey(std::string& out, uint32_t field, uint32_t wire) {
    putVarint(out, (uint64_t(field) << 3) | wire);
}

} // namespace

void ProtoWriter::varint(uint32_t field, uint64_t value) {
    putKey(m_data, field, 0);
    putVarint(m_data, value);
}

void ProtoWriter::fixed32(uint32_t field, uint32_t bits) {
    putKey(m_data, field, 5);
    for (int i = 0; i < 4; ++i)
        m_data.push_back(char(uint8_t(bits >> (8 * i))));
}

void ProtoWriter::bytes(uint32_t field, const std::string& data) {
    m_data += lengthPrefix(field, data.size());
    m_data += data;
}

std::string ProtoWriter::lengthPrefix(uint32_t field, uint64_t length) {
    std::string out;
    putKey(out, field, 2);
    putVarint(out, length);
    return out;
}

ProtoReader::ProtoReader(const std::string& data, std::string source)
    : m_data(data), m_source(std::move(source)) {}

ProtoReader::Key ProtoReader::key() {
    const uint64_t k = varint();
    return {uint32_t(k >> 3), uint32_t(k & 7)};
}

uint64_t ProtoReader::varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (m_pos >= m_data.size())
            throw Error(m_source, "", "truncated protobuf varint");
        const uint8_t c = uint8_t(m_data[m_pos++]);
        v |= uint64_t(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    throw Error(m_source, "", "protobuf varint too long");
}

uint32_t ProtoReader::fixed32(const std::string& field) {
    if (m_data.size() - m_pos < 4)
        throw Error(m_source, field, "truncated");
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i)
        bits |= uint32_t(uint8_t(m_data[m_pos++])) << (8 * i);
    return bits;
}

std::string ProtoReader::bytes(const std::string& field) {
    const uint64_t length = varint();
    if (length > m_data.size() - m_pos)
        throw Error(m_source, field, "truncated");
    std::string payload = m_data.substr(m_pos, size_t(length));
    m_pos += size_t(length);
    return payload;
}

void ProtoReader::skip(uint32_t wire) {
    uint64_t length = 0;
    if (wire == 0)
        varint();
    else if (wire == 1)
        length = 8;
    else if (wire == 5)
        length = 4;
    else if (wire == 2)
        length = varint();
    else
        throw Error(m_source, "", "unsupported protobuf wire type");
    if (length > m_data.size() - m_pos)
        throw Error(m_source, "", "truncated protobuf field");
    m_pos += size_t(length);
}

} // namespace qs
