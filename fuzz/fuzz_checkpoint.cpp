// libFuzzer target: a checkpoint folder, i.e. model.safetensors.index.json and two shards
// (FuzzSupport.h: parts separated by "\n--8<--\n"). Drives Checkpoint::open with its real file
// paths (readTextFile, parseJsonText, SafetensorsFile::open and its mapping), then every lookup a
// model family makes. With an empty index part the first shard is written as model.safetensors.
// A finding is a crash, a sanitizer report, an exception other than qs::Error, or an accepted
// checkpoint whose tensors do not lie inside their files (__builtin_trap).
#include "FuzzSupport.h"
#include "io/Checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 3);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    if (!parts[0].empty()) {
        dir.write("model.safetensors.index.json", parts[0]);
        if (!parts[1].empty())
            dir.write("model-00001-of-00002.safetensors", parts[1]);
        if (!parts[2].empty())
            dir.write("model-00002-of-00002.safetensors", parts[2]);
    } else if (!parts[1].empty()) {
        dir.write("model.safetensors", parts[1]);
    }
    qsfuzz::expectCleanRefusal([&] {
        const auto ckpt = qs::Checkpoint::open(dir.path());
        uint64_t bytes = 0;
        for (const std::string& name : ckpt->tensorNames()) {
            const qs::TensorInfo& info = ckpt->info(name);
            const qs::SafetensorsFile& file = ckpt->fileOf(name);
            // An accepted tensor lies inside its file's mapping: touch its first and last byte.
            if (file.header().dataOffset + info.end > file.fileSize() || info.end < info.begin)
                __builtin_trap();
            if (info.byteSize() > 0) {
                const uint8_t* p = file.data(info);
                bytes += p[0] + p[info.byteSize() - 1];
            }
            ckpt->find("model." + name); // the bare-base-model fallback
        }
        ckpt->files();
        if (ckpt->totalBytes() < bytes / 512) // keeps `bytes` used; never true
            __builtin_trap();
    });
    return 0;
}
