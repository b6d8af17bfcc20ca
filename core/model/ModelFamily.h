#pragma once

#include "model/ModelConfig.h"
#include "model/ModuleNode.h"
#include "model/ScalingTemplate.h"

#include <memory>
#include <string>
#include <vector>

namespace qs {

class Checkpoint;
class DecoderModel;
class JsonFields;
struct ComputeOptions;

// What passes outside the model may do with a family's models. Each family declares its own
// (ModelFamily::capabilities), and the passes read it through the model's family
// (findFamily(config.modelType)) instead of keeping lists of family names.
struct FamilyCapabilities {
    bool rotation = false; // ResidualRotation folds and rotates its residual stream
    bool onnx = false;     // the ONNX exporter writes its decoder as one graph
    // The llama.cpp architecture the GGUF exporter writes it as, a row of io/GgufArchitecture.h
    // ("llama", "qwen2moe"); nullptr: not written.
    const char* gguf = nullptr;
};

// One model family (Llama, Mistral, Qwen2, OPT, ...): how its config.json reads, which tensors
// it has, how it computes. One family is one file under model/families/.
class ModelFamily {
public:
    virtual ~ModelFamily() = default;
    virtual std::string name() const = 0;
    virtual std::vector<std::string> modelTypes() const = 0; // config.json "model_type" values
    // Keys of config.json the family reads, or knows not to change its forward. The parser
    // refuses any other key (beyond the metadata every config carries, ConfigParser.cpp):
    // a key nobody reads may change the forward, and a silent default gives wrong numbers.
    virtual std::vector<std::string> knownKeys() const = 0;
    // Fills the family's fields of `config` (common fields are already set).
    virtual void parseConfig(const JsonFields& fields, ModelConfig& config) const = 0;
    // The module tree from headers alone; throws qs::Error for a missing or mis-shaped tensor.
    virtual ModuleNode buildTree(const ModelConfig& config, const Checkpoint& checkpoint) const = 0;
    virtual std::unique_ptr<DecoderModel> create(const ModelConfig& config,
                                                 std::shared_ptr<const Checkpoint> checkpoint,
                                                 const ComputeOptions& compute) const = 0;
    // Which linears of a block share an input and what precedes them (SmoothQuant, AWQ,
    // AutoSmoothQuant). The default refuses with qs::Error naming the family: a family whose
    // blocks cannot be rescaled exactly declares no template, or overrides this to name the
    // layer that prevents it.
    virtual ScalingTemplate scalingTemplate(const ModelConfig& config) const;
    // None by default: a family is rotated or exported by a format only when it says so.
    virtual FamilyCapabilities capabilities() const { return {}; }
};

// The families compiled in; explicit so static-library linking cannot drop one.
const std::vector<const ModelFamily*>& modelFamilies();
// The family for a config's model_type; qs::Error listing the supported types when unknown,
// and saying what is missing for a type Quantscope knows but does not open yet
// (notSupportedYet).
const ModelFamily& familyFor(const std::string& modelType, const std::string& source);
// What is missing for a model type that Quantscope recognises but no family reads yet (issue
// 31's families not ported yet, none at present); nullptr for any other type.
const char* notSupportedYet(const std::string& modelType);
// The family for a model_type; nullptr when no family reads it.
const ModelFamily* findFamily(const std::string& modelType);
// The model types of the families that declare `capability`, in registry order (for messages
// that name what is supported): familiesWith(&FamilyCapabilities::onnx).
std::vector<std::string> familiesWith(bool FamilyCapabilities::*capability);
// The same for a capability named by a string (FamilyCapabilities::gguf): the families that set it.
std::vector<std::string> familiesWith(const char* FamilyCapabilities::*capability);

} // namespace qs
