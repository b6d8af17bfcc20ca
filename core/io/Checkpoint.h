#pragma once

#include "io/SafetensorsFile.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qs {

// The safetensors side of a Hugging Face checkpoint folder: model.safetensors, or shards listed
// by model.safetensors.index.json. Headers only until a tensor's bytes are asked for. Torch-free.
class Checkpoint {
public:
    static std::unique_ptr<Checkpoint> open(const std::string& directory);

    // Reads the tensors of the safetensors file `path` in place of this checkpoint's tensors of
    // the same names, and adds those it does not have: how an export of a transformed model (a
    // rotated embedding, norm and head) reads them without copying the untouched weights. The
    // overlay is not one of files() and not in totalBytes().
    void addOverlay(const std::string& path);

    const std::string& directory() const { return m_directory; }
    bool contains(const std::string& name) const { return find(name) != nullptr; }
    // Header entry of a tensor; qs::Error naming the tensor and the files searched when absent.
    const TensorInfo& info(const std::string& name) const;
    const TensorInfo* find(const std::string& name) const;
    const SafetensorsFile& fileOf(const std::string& name) const;
    std::vector<std::string> tensorNames() const; // sorted
    std::vector<std::string> files() const;       // file names relative to the folder
    uint64_t totalBytes() const;

private:
    std::map<std::string, size_t>::const_iterator locate(const std::string& name) const;

    std::string m_directory;
    std::vector<std::unique_ptr<SafetensorsFile>> m_files;
    std::map<std::string, size_t> m_where; // tensor name → index into m_files
    size_t m_ownFiles = 0;                 // m_files beyond this are overlays
};

} // namespace qs
