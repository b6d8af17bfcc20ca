// libFuzzer target: an AMD Quark hf_format export folder, i.e. config.json (with its
// quantization_config), model.safetensors with the packed weights, scales and zero points, and
// optionally an index with a second shard (FuzzSupport.h: config.json ✂ shard 1 ✂ index ✂
// shard 2; with an empty index part the first shard is written as model.safetensors). Drives
// what `quantscope-cli inspect` and `eval` do with such a folder: inspectQuarkFolder (the stored
// scheme of every quantized layer), then openCheckpointForCompute, which dequantizes every
// quantized linear into the cache checkpoint and maps it (every tensor of it is touched), and
// readStoredQuantization, the static input/output scales an eval run applies. The cache goes to a
// folder of this process, emptied before each input (the cache key is path, size and mtime, which
// two inputs may share).
//
// A finding is a crash, a sanitizer report, an exception other than qs::Error, or
// (__builtin_trap) an opened real-quantized export (as inspect reported it) that still has a
// quantization parameter (weight/input/output scale or zero point), a quantized layer whose weight
// is not a 2-D float tensor, a tensor outside its file's mapping, stored activation parameters
// that are not one positive scale and one zero point, or a refused export that leaves a file in
// the cache (nothing half-written).
#include "FuzzSupport.h"
#include "model/QuarkFolder.h"

#include <QDir>
#include <QDirIterator>
#include <QTemporaryDir>

#include <set>

namespace {

// The dequantization cache of this process: XDG_CACHE_HOME, which QStandardPaths reads on each
// call. Set here rather than in LLVMFuzzerInitialize, which the replay build (ReplayMain.cpp)
// does not call.
QTemporaryDir& cacheDir() {
    static QTemporaryDir dir(QDir::tempPath() + "/qs-fuzz-cache-XXXXXX");
    static const bool set = [] {
        if (!dir.isValid())
            std::abort(); // not a finding: the machine cannot run this target
        qputenv("XDG_CACHE_HOME", dir.path().toUtf8());
        return true;
    }();
    (void)set;
    return dir;
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool cacheHasFiles() {
    QDirIterator it(cacheDir().path(), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    return it.hasNext();
}

void checkOpened(const qs::Checkpoint& ckpt, const std::set<std::string>& quantizedLayers) {
    uint64_t bytes = 0;
    for (const std::string& name : ckpt.tensorNames()) {
        for (const char* extra : {".weight_scale", ".weight_zero_point", ".input_scale",
                                  ".input_zero_point", ".output_scale", ".output_zero_point"})
            if (endsWith(name, extra))
                __builtin_trap(); // dequantized checkpoints carry no quantization parameters
        const qs::TensorInfo& info = ckpt.info(name);
        const qs::SafetensorsFile& file = ckpt.fileOf(name);
        if (file.header().dataOffset + info.end > file.fileSize() || info.end < info.begin)
            __builtin_trap();
        if (endsWith(name, ".weight") && quantizedLayers.count(name.substr(0, name.size() - 7)) &&
            (info.shape.size() != 2 ||
             !(info.dtype == qs::DType::F32 || info.dtype == qs::DType::F16 ||
               info.dtype == qs::DType::BF16)))
            __builtin_trap();
        if (info.byteSize() > 0) {
            const uint8_t* p = file.data(info);
            bytes += p[0] + p[info.byteSize() - 1];
        }
    }
    if (ckpt.totalBytes() < bytes / 512) // keeps `bytes` used; never true
        __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> parts = qsfuzz::splitParts(data, size, 4);
    qsfuzz::ScratchDir& dir = qsfuzz::scratch();
    dir.clear();
    if (!QDir(cacheDir().path()).removeRecursively() || !QDir().mkpath(cacheDir().path()))
        std::abort();
    if (!parts[0].empty())
        dir.write("config.json", parts[0]);
    if (!parts[2].empty()) {
        dir.write("model.safetensors.index.json", parts[2]);
        if (!parts[1].empty())
            dir.write("model-00001-of-00002.safetensors", parts[1]);
        if (!parts[3].empty())
            dir.write("model-00002-of-00002.safetensors", parts[3]);
    } else if (!parts[1].empty()) {
        dir.write("model.safetensors", parts[1]);
    }
    qs::QuarkFolderInfo info;
    bool inspected = false;
    qsfuzz::expectCleanRefusal([&] {
        info = qs::inspectQuarkFolder(dir.path());
        inspected = true;
    });
    bool refused = true;
    qsfuzz::expectCleanRefusal([&] {
        const std::unique_ptr<qs::Checkpoint> opened = qs::openCheckpointForCompute(dir.path());
        refused = false;
        // A folder that is not a real-quantized Quark export opens as it is (its own tensors).
        if (!inspected || !info.realQuantized)
            return;
        std::set<std::string> quantized;
        for (const auto& layer : info.layers)
            quantized.insert(layer.first);
        checkOpened(*opened, quantized);
        // What an eval run applies besides the weights: the stored activation parameters.
        const qs::quant::StoredQuantization stored = qs::readStoredQuantization(dir.path());
        for (const std::string& layer : quantized) {
            const auto it = stored.find(layer);
            if (it == stored.end() || !it->second.weight)
                __builtin_trap();
        }
        for (const auto& [layer, s] : stored)
            for (const auto* p : {&s.input, &s.output})
                if (*p && ((*p)->scale.numel() != 1 || (*p)->zeroPoint.numel() != 1 ||
                           !((*p)->scale.item<double>() > 0)))
                    __builtin_trap();
    });
    if (refused && cacheHasFiles())
        __builtin_trap();
    return 0;
}
