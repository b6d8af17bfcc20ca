#pragma once

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"
#include "model/ModuleNode.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qs {

struct Recipe;

// Decides each linear's plan before any weight is read: which scheme (the recipe's resolution),
// which output spec, and what happens to layers whose shape does not fit their scheme.
class LayerPlanner {
public:
    // Scheme of a linear (full name, kind such as "q_proj"); nullopt leaves it unquantized.
    using SchemeFn =
        std::function<std::optional<quant::QuantScheme>(const std::string&, const std::string&)>;
    // Output (KV-cache) spec of a linear, if any.
    using OutputFn =
        std::function<std::optional<quant::QuantSpec>(const std::string&, const std::string&)>;

    // `unfitPolicy`: "error" (an unfit layer stops the run, naming it) or "skip" (it stays
    // unquantized and is reported).
    LayerPlanner(SchemeFn schemeFor, OutputFn outputSpecFor, std::string unfitPolicy);
    // The recipe's own resolution (Recipe::schemeFor, Recipe::kvOutputFor, unfit_policy).
    static LayerPlanner forRecipe(const Recipe& recipe);

    // Quantization the checkpoint already carries (a real-quantized export): plans take it, and
    // static quantizers with stored parameters need no calibration.
    void setStored(quant::StoredQuantization stored) { m_stored = std::move(stored); }

    // Checks every block linear of `tree` against its scheme (headers only). Under "error"
    // throws qs::Error naming every unfit layer; under "skip" remembers them.
    void checkShapes(const ModuleNode& tree);

    // The plans of one loaded block's linears, in the block's order (no weight touched yet).
    std::vector<LayerPlan> planBlock(DecoderBlock& block);

    // Layers left unquantized by the "skip" policy, "name: reason", in the order found.
    const std::vector<std::string>& skipped() const { return m_skipped; }
    // Whether any linear of `tree` has a static input or output quantizer (needs calibration).
    bool needsCalibration(const ModuleNode& tree) const;
    // The block linears the recipe quantizes (unfit ones skipped), with their schemes: what an
    // algorithm checks before any work (BlockTransform::checkLayer).
    std::vector<std::pair<std::string, quant::QuantScheme>>
    quantizedLinears(const ModuleNode& tree) const;

    // The output spec of a linear whose planned scheme is `scheme` (nullopt: unquantized): the
    // recipe's KV-cache spec when it has one for the layer, else the scheme's own output spec.
    std::optional<quant::QuantSpec>
    outputSpecFor(const std::string& layer, const std::string& kind,
                  const std::optional<quant::QuantScheme>& scheme) const;

    // Why a weight of shape [out, in] cannot take `scheme` (empty when it can).
    static std::string unfitReason(const quant::QuantScheme& scheme, int64_t inFeatures);
    // The block linears of `tree` (2-D weights inside a decoder block), in the model's order:
    // the layers a recipe can quantize.
    static std::vector<const ModuleNode*> blockLinears(const ModuleNode& tree);

private:
    void markUnfit(const std::string& layer, const std::string& reason);

    SchemeFn m_schemeFor;
    OutputFn m_outputSpecFor;
    // Whether the recipe excludes a layer (forRecipe): a layer without a scheme is noted
    // "excluded" only then, not when the recipe simply gives it none.
    std::function<bool(const std::string&)> m_isExcluded;
    std::string m_unfitPolicy;
    std::map<std::string, std::string> m_unfit; // layer -> reason
    std::vector<std::string> m_skipped;
    quant::StoredQuantization m_stored;
};

} // namespace qs
