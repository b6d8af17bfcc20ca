#include "model/LlamaStyleFamily.h"

namespace qs {

namespace {

// Llama 1-3 (GQA, tied embeddings, Llama-3 rope scaling, optional attention/MLP biases).
class LlamaFamily : public LlamaStyleFamily {
public:
    std::string name() const override { return "llama"; }
    std::vector<std::string> modelTypes() const override { return {"llama"}; }
    // llama.cpp's "llama" architecture is this family's layout: GGUF writes it.
    FamilyCapabilities capabilities() const override {
        return {/*rotation=*/true, /*onnx=*/true, /*gguf=*/"llama"};
    }
};

} // namespace

const ModelFamily& llamaFamily() {
    static const LlamaFamily family;
    return family;
}

} // namespace qs
