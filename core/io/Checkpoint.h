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
};

} // namespace qs
