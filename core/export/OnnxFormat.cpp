// The ONNX format's row: the Llama-style decoders their family declares (FamilyCapabilities),
// the schemes OnnxExporter writes as QDQ.
#include "export/FormatWriter.h"
#include "export/OnnxExporter.h"

namespace qs {

FormatWriter onnxFormatWriter() {
    FormatWriter w;
    w.format = {
        "onnx",
        "onnx",
        {},
        "ONNX graph with QuantizeLinear/DequantizeLinear (Llama-style decoders; onnxruntime)",
        {},
        true};
    w.problems = [](const ExportCheck& check) -> std::vector<std::string> {
        if (check.model)
            if (const std::string r = OnnxExporter::modelReason(*check.model); !r.empty())
                return {"model: " + r};
        return layerProblems(check, [](const ModuleNode&, std::optional<quant::QuantScheme> scheme,
                                       const std::optional<quant::QuantSpec>& kv) {
            if (scheme && kv)
                scheme->output = kv; // the KV-cache spec replaces the scheme's output spec
            return scheme ? OnnxExporter::unfitReason(*scheme)
                          : OnnxExporter::activationReason(*kv, "output");
        });
    };
    w.create = [](const ExportContext& context) -> std::unique_ptr<Exporter> {
        return std::make_unique<OnnxExporter>(context);
    };
    return w;
}

} // namespace qs
