// Where a recipe came from: which model config (by hash), which tool version, when.
#pragma once

#include "recipe/Recipe.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace qs {

// SHA-256 (lowercase hex) of the canonical form of a config.json: nlohmann's compact dump,
// which sorts keys and drops whitespace, so reformatting or reordering the file keeps the hash.
// Invalid JSON throws qs::Error naming `source`.
std::string modelConfigHash(const std::string& configJsonText,
                            const std::string& source = "config.json");

// QS_VERSION, defined by core's CMake from the project version.
std::string toolVersion();

// Hash of the config, tool version, the current UTC time (ISO 8601) and the model path.
Provenance makeProvenance(const std::string& configJsonText, const std::string& modelPath);

// A model's identity without reading its weights: SHA-256 over the canonical config.json and the
// JSON header of every *.safetensors file in the folder (by file name), so a re-saved or edited
// checkpoint gets another hash. Throws qs::Error naming the file it cannot read.
std::string modelHeadersHash(const std::string& modelDir);

// SHA-256 of the recipe's canonical JSON without its provenance block: when and where a recipe
// was recorded does not change what it asks for.
std::string recipeHash(const Recipe& recipe);

// Where a result came from, attached to every report (CLI JSON, GUI runs): the model (path and
// headers hash), the recipe (hash), the data (file, windows, window length), the engine version,
// the device and the dtype.
struct ResultProvenance {
    std::string modelPath;
    std::string modelHash;  // modelHeadersHash
    std::string recipeHash; // recipeHash; empty for an unquantized evaluation
    std::string calibrationData;
    int64_t calibrationWindows = 0;
    int64_t calibrationSeqLen = 0;
    std::string evaluationData;
    int64_t evaluationWindows = 0;
    int64_t evaluationSeqLen = 0;
    std::string engineVersion = toolVersion();
    std::string device;
    std::string dtype;

    nlohmann::json toJson() const;
};

} // namespace qs
