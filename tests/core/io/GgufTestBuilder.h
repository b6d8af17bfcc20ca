// Writes small GGUF file images for the reader's tests, field by field, so a test can put any
// value (a hostile count, a bad offset) exactly where the format has it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ggufbuild {

class Bytes {
public:
    template <typename T> Bytes& raw(T v) {
        m_data.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Bytes& str(const std::string& s) {
        raw<uint64_t>(s.size());
        m_data += s;
        return *this;
    }
    Bytes& bytes(const std::string& b) {
        m_data += b;
        return *this;
    }
    const std::string& data() const { return m_data; }
    std::string& data() { return m_data; }

private:
    std::string m_data;
};

struct Tensor {
    std::string name;
    std::vector<uint64_t> dims; // ne0 first
    uint32_t type = 0;
    uint64_t offset = 0;
};

// A GGUF v3 file: `kvs` are whole serialised entries (key, type, value); tensor infos as given;
// padding to `alignment`, then `data`.
inline std::string gguf(const std::vector<std::string>& kvs, const std::vector<Tensor>& tensors,
                        const std::string& data, uint64_t alignment = 32, uint32_t version = 3) {
    Bytes b;
    b.bytes("GGUF").raw<uint32_t>(version).raw<uint64_t>(tensors.size()).raw<uint64_t>(kvs.size());
    for (const std::string& kv : kvs)
        b.bytes(kv);
    for (const Tensor& t : tensors) {
        b.str(t.name).raw<uint32_t>(uint32_t(t.dims.size()));
        for (uint64_t d : t.dims)
            b.raw<uint64_t>(d);
        b.raw<uint32_t>(t.type).raw<uint64_t>(t.offset);
    }
    b.data().append((alignment - b.data().size() % alignment) % alignment, '\0');
    b.bytes(data);
    return b.data();
}

inline std::string kvU32(const std::string& key, uint32_t v) {
    return Bytes().str(key).raw<uint32_t>(4).raw<uint32_t>(v).data();
}
inline std::string kvF32(const std::string& key, float v) {
    return Bytes().str(key).raw<uint32_t>(6).raw<float>(v).data();
}
inline std::string kvString(const std::string& key, const std::string& v) {
    return Bytes().str(key).raw<uint32_t>(8).str(v).data();
}
inline std::string kvStrings(const std::string& key, const std::vector<std::string>& v) {
    Bytes b;
    b.str(key).raw<uint32_t>(9).raw<uint32_t>(8).raw<uint64_t>(v.size());
    for (const std::string& s : v)
        b.str(s);
    return b.data();
}

} // namespace ggufbuild
