#include "io/JsonFields.h"
#include "model/families/GemmaFamilyBase.h"

namespace qs {

namespace {

// Gemma 2: GemmaFamilyBase with attention and final logit soft-capping; without layer_types,
// even layers (0, 2, ...) slide.
class Gemma2Family : public GemmaFamilyBase {
public:
    std::string name() const override { return "gemma2"; }
    std::vector<std::string> modelTypes() const override { return {"gemma2"}; }

protected:
    int64_t defaultSlidingPattern(const JsonFields&) const override { return 2; }
};

} // namespace

const ModelFamily& gemma2Family() {
    static const Gemma2Family family;
    return family;
}

} // namespace qs
