// libFuzzer target: the input is a whole GGUF file image. The header parser must either accept
// it with invariants that hold, or throw qs::Error. An accepted file's tensors are decoded where
// Quantscope decodes their type, and a "llama" file goes through the whole conversion into a
// checkpoint folder (config, tensors, tokenizer files) in a scratch folder; the written folder
// must read back. Anything other than qs::Error escaping is a finding.
#include "FuzzSupport.h"

#include "io/GgmlDequantize.h"
#include "io/GgufFile.h"
#include "io/GgufFolder.h"
#include "io/SafetensorsFile.h"
#include "util/Error.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

// What the parser promises about an accepted header.
void checkInvariants(const qs::GgufHeader& h, uint64_t size) {
    if (h.alignment == 0 || (h.alignment & (h.alignment - 1)) != 0 || h.dataOffset > size)
        __builtin_trap();
    if (!h.tensors.empty() && h.dataOffset % h.alignment != 0)
        __builtin_trap();
    if (h.keyOrder.size() != h.metadata.size())
        __builtin_trap();
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const qs::GgufTensorInfo& t : h.tensors) {
        if (t.name.empty() || t.dims.empty() || t.dims.size() > 4 || t.offset % h.alignment)
            __builtin_trap();
        for (int64_t d : t.dims)
            if (d < 1)
                __builtin_trap();
        const qs::GgmlTypeTraits traits = qs::ggmlTypeTraits(t.type);
        if (traits.blockSize == 0 || t.dims[0] % traits.blockSize != 0)
            __builtin_trap();
        if (t.offset + t.byteSize > size - h.dataOffset || t.offset + t.byteSize < t.offset)
            __builtin_trap();
        spans.emplace_back(t.offset, t.offset + t.byteSize);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k)
        if (spans[k].first < spans[k - 1].second)
            __builtin_trap();
}

void decodeAll(const qs::GgufHeader& h, const uint8_t* data) {
    for (const qs::GgufTensorInfo& t : h.tensors) {
        if (!qs::ggmlCanDequantize(t.type) || t.numel() > (int64_t(1) << 20))
            continue;
        const int64_t rows = t.numel() / t.dims[0];
        const uint64_t rowBytes = t.byteSize / uint64_t(rows);
        std::vector<float> row(size_t(t.dims[0]));
        for (int64_t r = 0; r < rows; ++r)
            qs::ggmlDequantizeRow(data + h.dataOffset + t.offset + uint64_t(r) * rowBytes,
                                  row.data(), t.dims[0], qs::GgmlType(t.type));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    qs::GgufHeader header;
    try {
        header = qs::parseGgufHeader(data, uint64_t(size), "fuzz.gguf");
    } catch (const qs::Error&) {
        return 0; // refused with a message: the expected outcome for most inputs
    }
    checkInvariants(header, uint64_t(size));
    decodeAll(header, data);
    const qs::GgufValue* arch = header.find("general.architecture");
    if (!arch || arch->s != "llama")
        return 0;
    qsfuzz::ScratchDir& scratch = qsfuzz::scratch();
    scratch.clear();
    scratch.write("model.gguf", std::string(reinterpret_cast<const char*>(data), size));
    const std::string path = scratch.file("model.gguf");
    const std::string out = scratch.file("converted");
    try {
        qs::writeGgufAsCheckpoint(path, out);
    } catch (const qs::Error&) {
        // A refused conversion leaves nothing behind.
        if (QFileInfo::exists(QString::fromStdString(out)))
            __builtin_trap();
        return 0;
    }
    // An accepted one reads back: every GGUF tensor is in the safetensors file.
    const auto st = qs::SafetensorsFile::open(out + "/model.safetensors");
    if (st->header().tensors.size() != header.tensors.size() ||
        !QFileInfo::exists(QString::fromStdString(out + "/config.json")))
        __builtin_trap();
    QDir(QString::fromStdString(out)).removeRecursively();
    return 0;
}
