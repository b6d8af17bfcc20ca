#include "export/ExportSize.h"

#include "calib/LayerPlanner.h"
#include "export/FormatWriter.h"
#include "export/GgufExporter.h"
#include "export/GgufFormat.h"
#include "export/OnnxExporter.h"
#include "export/QuarkHfExporter.h"
#include "io/GgmlTypes.h"
#include "io/GgufArchitecture.h"
#include "io/SafetensorsFile.h"
#include "model/ModelLoader.h"
#include "quant/TypeTraits.h"
#include "recipe/LayerPattern.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

#include <algorithm>
#include <cmath>

namespace qs {

namespace {

using quant::Granularity;

uint64_t elementsOf(const std::vector<int64_t>& shape) {
    uint64_t n = 1;
    for (int64_t d : shape)
        n *= uint64_t(d);
    return n;
}

uint64_t alignUp(uint64_t n, uint64_t to) {
    return (n + to - 1) / to * to;
}

// Scales (and zero points) of a tensor spec on a weight [out, in].
uint64_t groupsOf(const quant::QuantSpec& s, int64_t out, int64_t in) {
    switch (s.granularity) {
    case Granularity::PerTensor:
        return 1;
    case Granularity::PerChannel:
    case Granularity::PerToken:
        return uint64_t(s.chAxis == 0 ? out : in);
    case Granularity::PerGroup: {
        const int64_t g = s.groupSize > 0 ? s.groupSize : 1;
        return s.chAxis == 0 ? uint64_t(in) * uint64_t((out + g - 1) / g)
                             : uint64_t(out) * uint64_t((in + g - 1) / g);
    }
    }
    return 1;
}

// A scale's width: one byte for E8M0 and E4M3 scales; otherwise the fp32 the engine computes
// and every format stores (Quark's safetensors, ONNX's DequantizeLinear scales).
uint64_t scaleBitsOf(const quant::QuantSpec& s) {
    return s.scaleType == quant::ScaleType::E8M0 || s.scaleType == quant::ScaleType::E4M3 ? 8 : 32;
}

// One block linear as planned: its scheme and its static activation quantizers.
struct Planned {
    const ModuleNode* node = nullptr;
    std::optional<quant::QuantScheme> scheme;
    std::optional<quant::QuantSpec> input, output; // static ones only: what formats store
};

// What every format's layout reads.
struct Inventory {
    std::string modelDir;
    const Checkpoint* checkpoint = nullptr;
    const ModelConfig* config = nullptr;
    std::map<std::string, const Planned*> byWeight; // "<linear>.weight" -> plan
    std::vector<Planned> planned;
};

void addTensor(FormatSize& f, StoredTensor t) {
    f.tensors.push_back(std::move(t));
}

// The static activation quantizers of a linear, by role ("input", "output").
std::vector<std::pair<std::string, const quant::QuantSpec*>> staticActivations(const Planned& p) {
    std::vector<std::pair<std::string, const quant::QuantSpec*>> out;
    if (p.input)
        out.emplace_back("input", &*p.input);
    if (p.output)
        out.emplace_back("output", &*p.output);
    return out;
}

// Quark hf_format: every source tensor copied as it is, each quantized linear's weight replaced
// by its layout, the static activation scales added; one safetensors file, names sorted. Exact:
// the header is the writer's own (safetensorsHeaderText).
void layoutQuark(const Inventory& inv, FormatSize& f) {
    std::vector<TensorInfo> file;
    auto add = [&](const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                   uint64_t bytes, StoredRole role, const std::string& layer) {
        addTensor(f, {name, dtypeName(dtype), shape, bytes, role, layer});
        TensorInfo info;
        info.name = name;
        info.dtype = dtype;
        info.shape = shape;
        file.push_back(std::move(info));
    };
    for (const std::string& name : inv.checkpoint->tensorNames()) {
        const TensorInfo& info = inv.checkpoint->info(name);
        const auto it = inv.byWeight.find(name);
        const Planned* p = it == inv.byWeight.end() ? nullptr : it->second;
        if (p && p->scheme) {
            for (const QuarkTensor& t : QuarkHfExporter::weightLayout(*p->scheme, info.shape))
                add(p->node->name + t.suffix, t.dtype, t.shape, t.bytes(), t.role, p->node->name);
        } else {
            add(name, info.dtype, info.shape, info.byteSize(),
                p ? StoredRole::FloatWeight : StoredRole::Other, p ? p->node->name : "");
        }
    }
    for (const Planned& p : inv.planned)
        for (const auto& [role, spec] : staticActivations(p))
            for (const QuarkTensor& t : QuarkHfExporter::activationLayout(role, *spec))
                add(p.node->name + t.suffix, t.dtype, t.shape, t.bytes(), t.role, p.node->name);
    QuarkHfExporter::sortLayout(file);
    const std::string header =
        safetensorsHeaderText(QuarkHfExporter::kFileName, file, QuarkHfExporter::fileMetadata());
    f.files = {
        {QuarkHfExporter::kFileName, 8 + header.size() + (file.empty() ? 0 : file.back().end)}};
}

// GGUF: every source tensor under its llama.cpp name (the architecture's, GgufArchitecture.h), in
// the type ggufStoredType gives it (F32 for the tensors the architecture keeps in float); the
// header (fixed part, metadata as the exporter writes it, one tensor info per GGUF tensor: a
// stacked experts tensor is one 3-D tensor) padded to the alignment, then each GGUF tensor's
// data padded to it. Exact.
void layoutGguf(const Inventory& inv, const ExportOptions& options, FormatSize& f) {
    const std::optional<GgmlType> asked = ggufTypeOf(options);
    const bool floatOnly = asked && ggmlIsFloat(*asked);
    const GgufArchitecture& arch = ggufArchitectureOf(inv.modelDir);
    uint64_t header = kGgufFixedHeaderBytes + ggufMetadataBytes(inv.modelDir, *inv.checkpoint);
    std::map<std::string, std::pair<size_t, uint64_t>> ggufTensors; // name -> dims, bytes
    for (const std::string& name : inv.checkpoint->tensorNames()) {
        const TensorInfo& info = inv.checkpoint->info(name);
        const GgufTensorName gguf = ggufNameOf(arch, name);
        if (gguf.name.empty())
            throw Error(inv.modelDir, name,
                        "has no GGUF name (llama.cpp's " + arch.name + " layout expected)");
        const auto it = inv.byWeight.find(name);
        const Planned* p = it == inv.byWeight.end() ? nullptr : it->second;
        const quant::QuantScheme* codes = p && p->scheme && !floatOnly ? &*p->scheme : nullptr;
        const GgmlType type = ggufKeptF32(arch, gguf.name)
                                  ? GgmlType::F32
                                  : ggufStoredType(info.shape, info.dtype, codes, asked);
        const int64_t row = info.shape.empty() ? 1 : info.shape.back();
        const uint64_t bytes = elementsOf(info.shape) / uint64_t(row) * ggmlRowBytes(row, type);
        const StoredRole role = !p                  ? StoredRole::Other
                                : ggmlIsFloat(type) ? StoredRole::FloatWeight
                                                    : StoredRole::Blocks;
        addTensor(f, {gguf.name, ggmlTypeTraits(type).name, info.shape, bytes, role,
                      p ? p->node->name : ""});
        auto& [dims, sum] = ggufTensors[gguf.name];
        dims = info.shape.size() + (gguf.expert >= 0 ? 1 : 0);
        sum += bytes;
    }
    uint64_t data = 0;
    for (const auto& [name, t] : ggufTensors) {
        header += ggufTensorInfoBytes(name, t.first);
        data += alignUp(t.second, kGgufAlignment);
    }
    f.files = {{"model.gguf", alignUp(header, kGgufAlignment) + data}};
}

// ONNX: the initializers of the graph. The nodes, the initializers' protobuf framing and the
// graph's small constants (shapes, axes, epsilon) are not modelled: they grow with the number of
// layers, not with the weights.
void layoutOnnx(const Inventory& inv, FormatSize& f) {
    using onnx::ElemType;
    auto add = [&](const OnnxTensor& t, const std::string& layer) {
        addTensor(f, {t.name, onnx::elemTypeName(t.type), t.dims, t.bytes(), t.role, layer});
    };
    for (const std::string& name : inv.checkpoint->tensorNames()) {
        const TensorInfo& info = inv.checkpoint->info(name);
        const auto it = inv.byWeight.find(name);
        const Planned* p = it == inv.byWeight.end() ? nullptr : it->second;
        const std::vector<int64_t> transposed(info.shape.rbegin(), info.shape.rend());
        if (p && p->scheme) {
            for (const OnnxTensor& t :
                 OnnxExporter::weightLayout(p->node->name, *p->scheme, info.shape))
                add(t, p->node->name);
        } else if (p) { // MatMul's B: the float weight transposed
            add({p->node->name + ".weight_transposed", ElemType::Float, transposed,
                 StoredRole::FloatWeight},
                p->node->name);
        } else if (name == "lm_head.weight") {
            // A tied head is a Transpose node of the embedding, no initializer of its own.
            if (!inv.config->tieWordEmbeddings)
                add({"lm_head.weight_transposed", ElemType::Float, transposed, StoredRole::Other},
                    "");
        } else { // embeddings, norms, biases: fp32 whatever the source stores
            add({name, ElemType::Float, info.shape, StoredRole::Other}, "");
        }
    }
    for (const Planned& p : inv.planned)
        for (const auto& [role, spec] : staticActivations(p))
            for (const OnnxTensor& t :
                 OnnxExporter::activationLayout(p.node->name + "." + role, *spec))
                add(t, p.node->name);
    const int64_t rows = OnnxExporter::tableRows(*inv.config);
    for (const char* table : {"rope.cos_table", "rope.sin_table"})
        add({table, ElemType::Float, {rows, inv.config->headDim}, StoredRole::Graph}, "");

    uint64_t inline_ = 0, external = 0, externalCount = 0;
    const bool usesExternal = OnnxExporter::usesExternalData(*inv.checkpoint);
    for (const StoredTensor& t : f.tensors) {
        if (usesExternal && t.bytes >= OnnxExporter::kExternalMinBytes) {
            external += t.bytes;
            ++externalCount;
        } else {
            inline_ += t.bytes;
        }
    }
    f.filesExact = false;
    f.files = {{"model.onnx", inline_}};
    f.filesNote = "model.onnx: the initializers' data only; the graph's nodes, its small "
                  "constants and each initializer's protobuf framing (name, dims, type and "
                  "field tags: about 20 bytes plus the name) come on top";
    if (usesExternal) {
        // Each initializer starts at a 4 KiB boundary of the data file: at most 4095 bytes of
        // padding before every one but the first.
        f.files.push_back({OnnxExporter::kDataFile, external});
        f.filesNote += "; " + std::string(OnnxExporter::kDataFile) + ": the data plus at most " +
                       std::to_string(4095 * (externalCount ? externalCount - 1 : 0)) +
                       " bytes of 4 KiB alignment padding";
    }
}

void total(const Inventory& inv, FormatSize& f) {
    for (const StoredTensor& t : f.tensors) {
        f.bytesByRole[t.role] += t.bytes;
        f.tensorBytes += t.bytes;
        if (t.role != StoredRole::Graph)
            f.modelBytes += t.bytes;
        if (t.layer.empty() || !isWeightRole(t.role))
            continue;
        f.linearWeightBytes += t.bytes;
        const auto it = inv.byWeight.find(t.layer + ".weight");
        if (it != inv.byWeight.end() && it->second->scheme)
            f.quantizedWeightBytes += t.bytes;
    }
}

} // namespace

SchemeBits schemeBits(const quant::QuantScheme& scheme, int64_t out, int64_t in) {
    const quant::QuantSpec& w = scheme.weight;
    const quant::TypeTraits& t = quant::traits(w.dtype);
    SchemeBits b;
    b.codes = uint64_t(out) * uint64_t(in) * uint64_t(t.bits);
    if (quant::hasFixedBlock(w.dtype)) {
        // The amortised shared scale of the table's row, back to bits per block.
        const uint64_t perBlock = uint64_t(std::llround((t.bitsPerElement - t.bits) * t.blockSize));
        b.blockScales = uint64_t(out) * uint64_t((in + t.blockSize - 1) / t.blockSize) * perBlock;
        if (t.encoding == quant::Encoding::NvFp4)
            b.scales = 32; // the fp32 tensor scale over the E4M3 group scales
    } else {
        const uint64_t groups = groupsOf(w, out, in);
        b.scales = groups * scaleBitsOf(w);
        if (quant::isInteger(w.dtype) && !w.symmetric)
            b.zeroPoints = groups * uint64_t(t.bits);
    }
    if (scheme.weightPreStage)
        b.scales += groupsOf(*scheme.weightPreStage, out, in) * scaleBitsOf(*scheme.weightPreStage);
    return b;
}

const std::vector<std::string>& sizedFormats() {
    static const std::vector<std::string> formats = {"quark", "gguf", "onnx"};
    return formats;
}

const FormatSize* ExportSizeReport::format(const std::string& name) const {
    for (const FormatSize& f : formats)
        if (f.format == name)
            return &f;
    return nullptr;
}

namespace {

std::optional<double> ratio(uint64_t bytes, int64_t weights) {
    if (weights <= 0)
        return std::nullopt;
    return 8.0 * double(bytes) / double(weights);
}

} // namespace

std::optional<double> ExportSizeReport::bitsPerLinearWeight(const std::string& name) const {
    const FormatSize* f = format(name);
    return f && f->holds() ? ratio(f->linearWeightBytes, linearWeights) : std::nullopt;
}

std::optional<double> ExportSizeReport::bitsPerQuantizedWeight(const std::string& name) const {
    const FormatSize* f = format(name);
    return f && f->holds() ? ratio(f->quantizedWeightBytes, quantizedWeights) : std::nullopt;
}

std::optional<double> ExportSizeReport::bitsPerParameter(const std::string& name) const {
    const FormatSize* f = format(name);
    return f && f->holds() ? ratio(f->modelBytes, parameters) : std::nullopt;
}

double ExportSizeReport::schemeBitsPerLinearWeight() const {
    uint64_t bits = 0;
    for (const LinearSize& l : linears)
        bits += l.bits.total();
    return linearWeights > 0 ? double(bits) / double(linearWeights) : 0.0;
}

std::optional<double> ExportSizeReport::schemeBitsPerQuantizedWeight() const {
    uint64_t bits = 0;
    for (const LinearSize& l : linears)
        if (l.scheme)
            bits += l.bits.total();
    if (quantizedWeights <= 0)
        return std::nullopt;
    return double(bits) / double(quantizedWeights);
}

ExportSizeReport exportSize(const std::string& modelDir, const Recipe& recipe,
                            const std::vector<std::string>& formats, const ExportOptions& options) {
    recipe.validate("recipe");
    checkExportOptions(options, "export options");
    std::vector<std::string> names; // canonical, checked before any file is read
    for (const std::string& name : formats) {
        names.push_back(canonicalExportFormat(name, "--format", ""));
        if (std::find(sizedFormats().begin(), sizedFormats().end(), names.back()) ==
            sizedFormats().end())
            throw Error("--format", name,
                        "sizes are computed for quark, gguf and onnx (the real-quantized "
                        "formats)");
    }
    const ModelHandle handle = openModelHandle(modelDir);
    const ModuleNode tree = handle.moduleTree();
    // The run's planning: the recipe's resolution, then unfit_policy ("error" throws here
    // naming every unfit layer, "skip" leaves them unquantized).
    LayerPlanner planner = LayerPlanner::forRecipe(recipe);
    planner.checkShapes(tree);
    std::map<std::string, quant::QuantScheme> quantized;
    for (auto& [layer, scheme] : planner.quantizedLinears(tree))
        quantized.emplace(layer, std::move(scheme));
    std::map<std::string, std::string> skipped; // layer -> reason
    for (const std::string& s : planner.skipped())
        skipped[s.substr(0, s.find(':'))] = s.substr(s.find(':') + 2);

    ExportSizeReport report;
    report.model = modelDir;
    Inventory inv;
    inv.modelDir = modelDir;
    inv.checkpoint = handle.checkpoint.get();
    inv.config = &handle.config;
    for (const std::string& name : inv.checkpoint->tensorNames())
        report.parameters += int64_t(elementsOf(inv.checkpoint->info(name).shape));
    for (const ModuleNode* n : LayerPlanner::blockLinears(tree)) {
        Planned p;
        p.node = n;
        const auto q = quantized.find(n->name);
        if (q != quantized.end())
            p.scheme = q->second;
        if (p.scheme && p.scheme->input && !p.scheme->input->isDynamic)
            p.input = p.scheme->input;
        p.output = planner.outputSpecFor(n->name, layerKindOf(n->name), p.scheme);
        if (p.output && p.output->isDynamic)
            p.output.reset();
        inv.planned.push_back(std::move(p));

        LinearSize l;
        l.name = n->name;
        l.shape = n->shape;
        const TensorInfo* weight = inv.checkpoint->find(n->name + ".weight");
        if (!weight)
            throw Error(modelDir, n->name + ".weight", "missing from the checkpoint");
        l.sourceDtype = dtypeName(weight->dtype);
        l.scheme = inv.planned.back().scheme;
        if (l.scheme) {
            l.bits = schemeBits(*l.scheme, l.shape[0], l.shape[1]);
            report.quantizedWeights += l.elements();
        } else {
            l.bits.codes = uint64_t(l.elements()) * uint64_t(dtypeBits(weight->dtype));
            l.note = skipped.count(n->name) ? skipped.at(n->name) : "excluded";
        }
        report.linearWeights += l.elements();
        report.linears.push_back(std::move(l));
    }
    for (const Planned& p : inv.planned)
        inv.byWeight[p.node->name + ".weight"] = &p;
    if (!recipe.algorithms.empty())
        report.notes.push_back(
            "algorithms change values, not sizes, except a rotation of a model whose head is "
            "tied to the embedding: it is written as its own lm_head tensor, not counted here");

    for (const std::string& name : names) {
        FormatSize f;
        f.format = name;
        const std::vector<std::string>& skippedLines = planner.skipped();
        // As a run with --allow-unloadable checks it: what the format can hold at all, then
        // what its consumers would refuse.
        f.problems =
            exportProblems(f.format, {recipe, tree, skippedLines, false, &handle.config, options});
        if (f.problems.empty())
            f.warnings = exportProblems(
                f.format, {recipe, tree, skippedLines, true, &handle.config, options});
        if (f.holds()) {
            try {
                if (f.format == "quark")
                    layoutQuark(inv, f);
                else if (f.format == "gguf")
                    layoutGguf(inv, options, f);
                else
                    layoutOnnx(inv, f);
            } catch (const Error& e) {
                // What the exporter would refuse when it starts (a tokenizer llama.cpp cannot
                // use, a tensor without a GGUF name): the format cannot hold this model.
                FormatSize refused;
                refused.format = f.format;
                refused.problems = {e.what()};
                f = std::move(refused);
            }
            total(inv, f);
        }
        std::map<std::string, LinearSize*> linearOf; // a MoE model has thousands of linears
        for (LinearSize& l : report.linears)
            linearOf[l.name] = &l;
        for (const StoredTensor& t : f.tensors)
            if (!t.layer.empty() && isWeightRole(t.role))
                linearOf.at(t.layer)->storedBytes[f.format] += t.bytes;
        report.formats.push_back(std::move(f));
    }
    return report;
}

} // namespace qs
