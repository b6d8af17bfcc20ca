#pragma once

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qs {

// The hook the calibration passes run a block with. Observe: static quantizers see the block's
// activations, which pass unchanged. Apply: inputs and outputs are fake-quantized (frozen static
// parameters, or dynamic). Reference: the block runs in full precision and the hook only records.
// With capture on, each linear's input (before its quantizer) and output (after it) are kept for
// the analysis of this batch; with a collector set, every input is appended to it (the capture
// pass that transforms read).
class BlockQuantHook : public LinearHook {
public:
    enum class Mode { Observe, Apply, Reference };

    // Quantizes with the plans that quantize something, each with the parts `filter` (when
    // given) selects.
    explicit BlockQuantHook(std::vector<LayerPlan>& plans, PlanFilter filter = {});

    void setMode(Mode mode) { m_mode = mode; }
    void setCapture(bool on) {
        m_capture = on;
        m_inputs.clear();
        m_outputs.clear();
    }
    void setCollector(std::map<std::string, std::vector<at::Tensor>>* collector) {
        m_collector = collector;
    }
    const std::map<std::string, at::Tensor>& inputs() const { return m_inputs; }
    const std::map<std::string, at::Tensor>& outputs() const { return m_outputs; }

    at::Tensor onInput(const LinearLayer& layer, const at::Tensor& input) override;
    at::Tensor onOutput(const LinearLayer& layer, const at::Tensor& input,
                        const at::Tensor& output) override;

private:
    LayerPlan* find(const std::string& name) const;

    std::map<std::string, LayerPlan*> m_plans;
    std::map<std::string, PlanParts> m_parts;
    Mode m_mode = Mode::Apply;
    bool m_capture = false;
    std::map<std::string, at::Tensor> m_inputs, m_outputs;
    std::map<std::string, std::vector<at::Tensor>>* m_collector = nullptr;
};

} // namespace qs
