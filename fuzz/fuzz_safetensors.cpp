// libFuzzer target: the input is a whole safetensors file image. The parser must either accept
// it with a header whose invariants hold, or throw qs::Error; anything else is a finding.
#include "io/SafetensorsFile.h"
#include "util/Error.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const qs::SafetensorsHeader header =
            qs::parseSafetensorsHeader(data, uint64_t(size), "fuzz.safetensors");
        // What the parser promises about an accepted header: tensors tile the data exactly.
        if (header.dataOffset < 8 || header.dataOffset > size)
            __builtin_trap();
        uint64_t cursor = 0;
        for (const qs::TensorInfo& t : header.tensors) {
            if (t.begin != cursor || t.end < t.begin || t.name.empty() || t.shape.size() > 8)
                __builtin_trap();
            for (int64_t d : t.shape)
                if (d < 0)
                    __builtin_trap();
            cursor = t.end;
        }
        if (header.dataOffset + cursor != size)
            __builtin_trap();
    } catch (const qs::Error&) {
        // Refused with a message: the expected outcome for most inputs.
    }
    return 0;
}
