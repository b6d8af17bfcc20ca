#include "export/GgufFormat.h"

#include "export/FormatWriter.h"
#include "export/GgufCodeBlocks.h"
#include "export/GgufExporter.h"
#include "io/GgufFolder.h"
#include "model/ModelFamily.h"
#include "util/Error.h"
#include "util/Join.h"

#include <algorithm>
#include <cctype>

namespace qs {

const char* const kGgufTypeOption = "gguf_type";

const std::vector<std::string>& ggufTypeNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n = {"auto"};
        for (GgmlType t : ggmlOfferedTypes())
            n.push_back(ggmlTypeName(t));
        return n;
    }();
    return names;
}

std::optional<GgmlType> ggufTypeFromName(const std::string& name) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    const std::vector<std::string>& offered = ggufTypeNames();
    if (std::find(offered.begin(), offered.end(), n) != offered.end()) {
        if (n == "auto")
            return std::nullopt;
        return ggmlOfferedTypeByName(n);
    }
    throw Error("--gguf-type", name, "unknown GGUF type (" + join(offered, ", ") + ")");
}

GgmlType ggmlTypeFromName(const std::string& name) {
    if (const std::optional<GgmlType> t = ggufTypeFromName(name))
        return *t;
    throw Error("--gguf-type", name, "'auto' picks a type per layer; a single type is needed here");
}

std::optional<GgmlType> ggufTypeOf(const ExportOptions& options) {
    const auto it = options.find(kGgufTypeOption);
    return it == options.end() ? std::nullopt : ggufTypeFromName(it->second);
}

namespace {

// An export folder's model.gguf, opened as llama.cpp's file is (converted once into a cached
// checkpoint folder).
std::string openGgufExport(const std::string& exportDir) {
    return resolveModelFolder(exportDir + "/model.gguf");
}

} // namespace

FormatWriter ggufFormatWriter() {
    FormatWriter w;
    w.format = {"gguf",
                "gguf",
                {},
                "GGUF v3 for llama.cpp (" +
                    join(familiesWith(&FamilyCapabilities::gguf), ", ", " and ") +
                    " families; the plan's int4/int8 codes as Q4_0, Q4_1 or Q8_0, or Q4_K, Q6_K, "
                    "F16, F32)",
                {{kGgufTypeOption, ggufTypeNames(), "auto",
                  "GGUF weight type: auto (each quantized layer's own codes, never re-rounded; "
                  "other tensors in the source's precision), q4_0, q4_1, q8_0 (quantized layers "
                  "must fit the type exactly), q4_k, q6_k (ggml's K-quants of unquantized "
                  "tensors), f16, bf16, f32 (the dequantized weights)"}},
                true};
    // GGUF holds weights only: activation and KV-cache specs are not written, so only a
    // layer's weight scheme can be refused.
    w.problems = [](const ExportCheck& check) -> std::vector<std::string> {
        // The exporter's constructor repeats this check (ExportCheck::model may be null).
        if (check.model)
            if (const std::string why = ggufModelProblem(*check.model); !why.empty())
                return {"model: " + why};
        const std::optional<GgmlType> type = ggufTypeOf(check.options);
        return layerProblems(check, [&](const ModuleNode& layer,
                                        const std::optional<quant::QuantScheme>& scheme,
                                        const std::optional<quant::QuantSpec>&) {
            return scheme ? ggufUnfitReason(*scheme, layer.shape, type) : std::string();
        });
    };
    w.create = [](const ExportContext& context) -> std::unique_ptr<Exporter> {
        return std::make_unique<GgufExporter>(context);
    };
    w.reader = openGgufExport;
    return w;
}

} // namespace qs
