#pragma once

#include "calib/LinearQuantizer.h"
#include "model/DecoderModel.h"

#include <map>
#include <string>

namespace qs {

// The hook the calibration pipeline runs a block with. Observe: static quantizers see the
// block's activations (weights already quantized, activations not yet). Apply: activations and
// outputs are fake-quantized with frozen parameters. Reference: the full-precision block, hook
// only records. With capture on, each linear's input (before its quantizer) and output are kept
// for the analysis of this batch.
class BlockQuantHook : public LinearHook {
public:
    enum class Mode { Observe, Apply, Reference };

    explicit BlockQuantHook(const std::map<std::string, LinearQuantizer*>& quantizers)
        : m_quantizers(quantizers) {}

    void setMode(Mode mode) { m_mode = mode; }
    void setCapture(bool on) {
        m_capture = on;
        m_inputs.clear();
        m_outputs.clear();
    }
    const std::map<std::string, at::Tensor>& inputs() const { return m_inputs; }
    const std::map<std::string, at::Tensor>& outputs() const { return m_outputs; }

    at::Tensor onInput(const LinearLayer& layer, const at::Tensor& input) override;
    at::Tensor onOutput(const LinearLayer& layer, const at::Tensor& input,
                        const at::Tensor& output) override;

private:
    LinearQuantizer* find(const std::string& name) const;

    const std::map<std::string, LinearQuantizer*>& m_quantizers;
    Mode m_mode = Mode::Apply;
    bool m_capture = false;
    std::map<std::string, at::Tensor> m_inputs, m_outputs;
};

} // namespace qs
