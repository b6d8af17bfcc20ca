#include "export/ExportFormat.h"

#include "io/GgmlTypes.h"

namespace qs {

const std::vector<ExportFormat>& exportFormats() {
    static const std::vector<ExportFormat> all = {
        {"fake",
         "hf_fake",
         {"hf_fake"},
         "fake-quantized Hugging Face checkpoint (float weights)",
         true},
        {"quark",
         "quark",
         {"hf_format"},
         "AMD Quark hf_format, real quantized (transformers + amd-quark, vLLM)",
         true},
        {"awq",
         "awq",
         {},
         "AMD Quark's awq custom mode: int4/uint4 per-group weights as qweight/qzeros/scales "
         "(AutoAWQ GEMM, vLLM)",
         true},
        {"gguf",
         "gguf",
         {},
         "GGUF v3 for llama.cpp (llama family; the plan's int4/int8 codes as Q4_0, Q4_1 or Q8_0, "
         "or Q4_K, Q6_K, F16, F32)",
         true},
        {"onnx",
         "onnx",
         {},
         "ONNX graph with QuantizeLinear/DequantizeLinear (Llama-style decoders; onnxruntime)",
         true},
    };
    return all;
}

const ExportFormat* findExportFormat(const std::string& n) {
    for (const ExportFormat& f : exportFormats()) {
        if (f.name == n || f.recipeTarget == n)
            return &f;
        for (const std::string& a : f.aliases)
            if (a == n)
                return &f;
    }
    return nullptr;
}

const std::vector<std::string>& ggufTypeNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n = {"auto"};
        for (GgmlType t : ggmlOfferedTypes())
            n.push_back(ggmlTypeName(t));
        return n;
    }();
    return names;
}

} // namespace qs
