#include "export/QuarkHfExporter.h"
#include "export/FormatWriter.h"
#include "io/TensorDType.h"

#include "export/TensorBlocks.h"
#include "quant/Packing.h"
#include "quant/TypeTraits.h"
#include "recipe/LayerPattern.h"
#include "recipe/QuarkConfig.h"
#include "util/Error.h"
#include "util/HostTensor.h"
#include "util/Strings.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

namespace qs {

namespace {

using quant::DataType;
using quant::Granularity;

using quant::isFp8;
using quant::isInt4;
using quant::isInt8;

// Hugging Face's name of the LM head in every causal-LM family we read.
constexpr const char* kHeadName = "lm_head";

// MX types with FP4/FP6 elements: the ones Quark 0.13 writes real_quantized (element codes
// packed into bytes, one E8M0 byte per block of 32).
bool isMxFloat(DataType t) {
    return t == DataType::MxFp4 || t == DataType::MxFp6E3M2 || t == DataType::MxFp6E2M3;
}

DType dtypeOfTensor(const at::Tensor& t, const std::string& name) {
    const std::optional<DType> d = dtypeOfScalarType(t.scalar_type());
    if (!d)
        throw Error(name, "dtype", "no safetensors dtype for this tensor");
    return *d;
}

// Why a tensor spec of one linear cannot be written (empty when it can).
std::string weightReason(const quant::QuantSpec& w, const std::vector<int64_t>& shape,
                         bool loaderLimits) {
    const int64_t out = shape[0], in = shape[1];
    const std::string type = quant::dataTypeName(w.dtype);
    if (isInt4(w.dtype)) {
        if (w.granularity == Granularity::PerGroup) {
            if (w.chAxis != -1 && w.chAxis != 1)
                return "per-group " + type + " along ch_axis " + std::to_string(w.chAxis) +
                       " has no Quark layout (use ch_axis -1)";
            if (loaderLimits && out % 8 != 0)
                return type + " per group is stored transposed, " + std::to_string(out) +
                       " output features packed into ceil(" + std::to_string(out) +
                       "/8) = " + std::to_string((out + 7) / 8) +
                       " int32 columns, but transformers + amd-quark allocate floor(out/8) = " +
                       std::to_string(out / 8) +
                       " and refuse the file (out must be a multiple of 8): exclude this layer "
                       "or give it an int8/fp8 scheme";
        } else if (w.granularity == Granularity::PerChannel ||
                   w.granularity == Granularity::PerTensor) {
            if (loaderLimits &&
                (in % 8 != 0 || (w.granularity == Granularity::PerChannel && out % 8 != 0)))
                return type + " " + quant::granularityName(w.granularity) +
                       " packs 8 codes per int32 along the input features (and the zero points "
                       "along the outputs); with shape [" +
                       std::to_string(out) + ", " + std::to_string(in) +
                       "] the consumers' floor(n/8) allocation cannot hold them (multiples of 8 "
                       "needed): exclude this layer or give it an int8/fp8 scheme";
        } else {
            return type + " " + quant::granularityName(w.granularity) +
                   " weights have no Quark layout";
        }
        return {};
    }
    if (isMxFloat(w.dtype)) {
        if (w.chAxis != -1 && w.chAxis != 1)
            return type + " along ch_axis " + std::to_string(w.chAxis) +
                   " has no Quark layout (blocks run along the input features: ch_axis -1)";
        if (w.groupSize != 32)
            return type + " with blocks of " + std::to_string(w.groupSize) +
                   " has no Quark layout (OCP MX blocks are 32 elements)";
        // Pack_fp4 pairs neighbouring codes into a byte, Pack_fp6 four codes into 3 bytes.
        const int64_t multiple = w.dtype == DataType::MxFp4 ? 2 : 4;
        if (in % multiple != 0)
            return type + " packs " + std::to_string(multiple) +
                   " codes per unit along the input features, which " + std::to_string(in) +
                   " is not a multiple of: exclude this layer";
        // Measured with transformers 5.23 + amd-quark 0.13: Quark's own export of stories260K
        // (down_proj: 172 inputs, scales [64, 6]) fails to load, the module holding [64, 5].
        if (loaderLimits && in % 32 != 0)
            return type + " stores ceil(" + std::to_string(in) +
                   "/32) = " + std::to_string((in + 31) / 32) +
                   " E8M0 scales per row (the last block zero padded), but transformers + "
                   "amd-quark allocate floor(in/32) = " +
                   std::to_string(in / 32) +
                   " and refuse the file (in must be a multiple of 32): exclude this layer";
        return {};
    }
    if (isInt8(w.dtype) || isFp8(w.dtype)) {
        if (w.granularity != Granularity::PerTensor && w.granularity != Granularity::PerChannel)
            return type + " " + quant::granularityName(w.granularity) +
                   " weights are not written by Quantscope's Quark exporter (per_tensor and "
                   "per_channel are)";
        return {};
    }
    return type + " weights are not written by Quantscope's Quark exporter yet (int4, uint4, "
                  "int8, uint8, fp8_e4m3, fp8_e5m2, mxfp4, mxfp6_e3m2, mxfp6_e2m3 are): use "
                  "--format fake";
}

// Quark 0.13's QTensorConfig.to_dict() has four fields the 0.11 layout (QuantSpec::toJson)
// lacks; the exporter writes the 0.13 layout so the block equals what Quark 0.13 writes (the
// values are Quark's defaults, which Quantscope's numerics assume).
void addQuark013Fields(nlohmann::json& spec) {
    if (!spec.is_object())
        return;
    spec.emplace("block_size", nullptr);
    spec.emplace("enable_buffer_reuse", false);
    spec.emplace("max_input_numel", 4194304);
    spec.emplace("zero_point_type", "int32");
}

// The engine quantizes block linears only, so the head is always written in float. Quark's
// loaders (transformers + amd-quark, vLLM) quantize every Linear the config does not exclude:
// without "lm_head" in `exclude`, transformers initialises the head's missing scales and the
// model is garbage (stories260K int8: perplexity 512 instead of 5.80). The recipe need not name
// the head, so the export does when no exclusion reaches it already.
void excludeFloatHead(nlohmann::json& qc) {
    nlohmann::json& exclude = qc["exclude"];
    if (!exclude.is_array())
        exclude = nlohmann::json::array();
    for (const auto& p : exclude)
        if (p.is_string() && matchesLayerPattern(p.get<std::string>(), kHeadName))
            return;
    exclude.push_back(kHeadName);
}

// Float Linears no exclusion reaches yet, by exact name (vLLM's Quark loader matches exactly or
// by "re:"): unfit block linears left unquantized, MoE routers and shared-expert gates (Quark's
// "*.gate", "*.shared_expert_gate"). Else Quark's loaders look for scales they do not have.
void excludeFloatLinears(nlohmann::json& qc, const std::vector<std::string>& names) {
    nlohmann::json& exclude = qc["exclude"];
    if (!exclude.is_array())
        exclude = nlohmann::json::array();
    for (const std::string& name : names) {
        const bool covered = std::any_of(exclude.begin(), exclude.end(), [&](const auto& p) {
            return p.is_string() && matchesLayerPattern(p.template get<std::string>(), name);
        });
        if (!covered)
            exclude.push_back(name);
    }
}

void addQuark013FieldsToConfig(nlohmann::json& layerConfig) {
    for (const char* role : {"weight", "input_tensors", "output_tensors", "bias"})
        if (layerConfig.contains(role))
            addQuark013Fields(layerConfig[role]);
}

} // namespace

std::string QuarkHfExporter::unfitReason(const quant::QuantScheme& scheme,
                                         const std::vector<int64_t>& shape, bool loaderLimits) {
    if (shape.size() != 2)
        return "not a 2-D linear weight";
    if (scheme.weightPreStage)
        return "progressive weights (" + scheme.label() +
               ") exist only as fake quantization in Quantscope: use --format fake";
    if (std::string r = weightReason(scheme.weight, shape, loaderLimits); !r.empty())
        return r;
    if (scheme.input && !scheme.input->isDynamic &&
        scheme.input->granularity != Granularity::PerTensor)
        return "static " + quant::granularityName(scheme.input->granularity) +
               " input quantization has no Quark tensor (input_scale is per tensor)";
    // MX inputs are quantized on the fly from each activation's own blocks: the config block
    // carries them, there is no tensor to write.
    if (scheme.input && !(isInt8(scheme.input->dtype) || isFp8(scheme.input->dtype) ||
                          isInt4(scheme.input->dtype) ||
                          (isMxFloat(scheme.input->dtype) && scheme.input->isDynamic)))
        return quant::dataTypeName(scheme.input->dtype) +
               " inputs are not written by Quantscope's Quark exporter yet";
    if (scheme.output)
        return outputReason(*scheme.output);
    return {};
}

std::string QuarkHfExporter::awqUnfitReason(const quant::QuantScheme& scheme,
                                            const std::vector<int64_t>& shape, bool loaderLimits,
                                            const quant::QuantScheme& first) {
    const quant::QuantSpec& w = scheme.weight;
    if (!isInt4(w.dtype) || w.granularity != Granularity::PerGroup || scheme.weightPreStage)
        return "the awq format holds int4/uint4 per-group weights only, not " + scheme.label() +
               ": use --format quark";
    if (scheme.input || scheme.output)
        return "the awq format holds weights only (no activation or KV-cache quantization): use "
               "--format quark";
    if (const std::string r = unfitReason(scheme, shape, loaderLimits); !r.empty())
        return r;
    const quant::QuantSpec& f = first.weight;
    if (w.dtype != f.dtype || w.groupSize != f.groupSize || w.symmetric != f.symmetric)
        return "the awq config states one bits/group_size/zero_point for every layer; " +
               scheme.label() + " differs from the first quantized layer's " + first.label() +
               ": use --format quark";
    return {};
}

std::string QuarkHfExporter::outputReason(const quant::QuantSpec& output) {
    if (output.isDynamic || !isFp8(output.dtype) || output.granularity != Granularity::PerTensor)
        return "quantized outputs other than static fp8 per tensor (the KV cache) are refused by "
               "vLLM's Quark loader";
    return {};
}

const std::map<std::string, std::string>& QuarkHfExporter::fileMetadata() {
    static const std::map<std::string, std::string> metadata = {{"format", "pt"}};
    return metadata;
}

void QuarkHfExporter::sortLayout(std::vector<TensorInfo>& layout) {
    std::sort(layout.begin(), layout.end(),
              [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
}

uint64_t QuarkTensor::bytes() const {
    uint64_t n = 1;
    for (int64_t d : shape)
        n *= uint64_t(d);
    return n * uint64_t(dtypeBits(dtype)) / 8;
}

std::vector<QuarkTensor> QuarkHfExporter::weightLayout(const quant::QuantScheme& scheme,
                                                       const std::vector<int64_t>& shape,
                                                       bool awq) {
    const quant::QuantSpec& w = scheme.weight;
    const int64_t out = shape.at(0), in = shape.at(1);
    const auto words = [](int64_t n) { return (n + 7) / 8; }; // packInt4: 8 codes per int32
    const bool perTensor = w.granularity == Granularity::PerTensor;
    // One scale (and zero point) per tensor, or per channel along ch_axis.
    const std::vector<int64_t> perScale =
        perTensor ? std::vector<int64_t>{} : std::vector<int64_t>{w.chAxis == 0 ? out : in};
    using R = StoredRole;
    if (isInt4(w.dtype)) {
        if (w.granularity == Granularity::PerGroup) {
            const int64_t groups = (in + w.groupSize - 1) / w.groupSize;
            return {{awq ? ".qweight" : ".weight", DType::I32, {in, words(out)}, R::Codes},
                    {awq ? ".scales" : ".weight_scale", DType::F32, {groups, out}, R::Scale},
                    {awq ? ".qzeros" : ".weight_zero_point",
                     DType::I32,
                     {groups, words(out)},
                     R::ZeroPoint}};
        }
        return {{".weight", DType::I32, {out, words(in)}, R::Codes},
                {".weight_scale", DType::F32, perScale, R::Scale},
                {".weight_zero_point", DType::I32,
                 perTensor ? std::vector<int64_t>{} : std::vector<int64_t>{words(out)},
                 R::ZeroPoint}};
    }
    if (isInt8(w.dtype))
        return {{".weight", w.dtype == DataType::Int8 ? DType::I8 : DType::U8, {out, in}, R::Codes},
                {".weight_scale", DType::F32, perScale, R::Scale},
                {".weight_zero_point", DType::I32, perScale, R::ZeroPoint}};
    if (isMxFloat(w.dtype)) // Pack_fp4: 2 codes per byte; Pack_fp6: 4 codes in 3 bytes
        return {{".weight",
                 DType::U8,
                 {out, w.dtype == DataType::MxFp4 ? in / 2 : in / 4 * 3},
                 R::Codes},
                {".weight_scale", DType::U8, {out, (in + 31) / 32}, R::BlockScale}};
    if (isFp8(w.dtype))
        return {{".weight",
                 w.dtype == DataType::Fp8E4M3 ? DType::F8_E4M3 : DType::F8_E5M2,
                 {out, in},
                 R::Codes},
                {".weight_scale", DType::F32, perScale, R::Scale}};
    throw Error("quark", quant::dataTypeName(w.dtype), weightReason(w, shape, false));
}

std::vector<QuarkTensor> QuarkHfExporter::activationLayout(const std::string& role,
                                                           const quant::QuantSpec& spec) {
    if (spec.isDynamic)
        return {};
    std::vector<QuarkTensor> t = {
        {"." + role + "_scale", DType::F32, {}, StoredRole::ActivationScale}};
    if (quant::isInteger(spec.dtype))
        t.push_back({"." + role + "_zero_point", DType::I32, {}, StoredRole::ActivationScale});
    return t;
}

QuarkHfExporter::QuarkHfExporter(const ExportContext& context, quant::PackOrder order, bool awq)
    : m_source(*context.source), m_context(context), m_order(order), m_awq(awq),
      m_folder(context.outDir) {
    m_names = m_source.tensorNames();
    std::stable_sort(m_names.begin(), m_names.end(),
                     [](const std::string& a, const std::string& b) {
                         const int ba = blockOfTensorName(a), bb = blockOfTensorName(b);
                         return ba != bb ? ba < bb : a < b;
                     });
    for (const std::string& n : m_names) {
        const int b = blockOfTensorName(n);
        if (b != -1 && b != INT_MAX && b >= context.numBlocks)
            throw Error(context.sourceDir, n, "belongs to a block beyond num_hidden_layers");
        m_blockOf.push_back(b);
    }
    m_spool.setFileName(QString::fromStdString(m_folder.tempPath("tensors.spool")));
    if (!m_spool.open(QIODevice::WriteOnly))
        throw Error(context.outDir, "tensors.spool",
                    "cannot create: " + m_spool.errorString().toStdString());
}

QuarkHfExporter::~QuarkHfExporter() = default;

void QuarkHfExporter::spool(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            const void* bytes, uint64_t size) {
    TensorInfo info;
    info.name = name;
    info.dtype = dtype;
    info.shape = shape;
    info.begin = uint64_t(m_spool.pos());
    info.end = info.begin + size;
    if (m_spool.write(static_cast<const char*>(bytes), qint64(size)) != qint64(size))
        throw Error(m_context.outDir, name, "cannot write: " + m_spool.errorString().toStdString());
    m_written.push_back(std::move(info));
}

void QuarkHfExporter::spoolTensor(const std::string& name, const at::Tensor& t) {
    const at::Tensor h = toHost(t).contiguous();
    spool(name, dtypeOfTensor(h, name), h.sizes().vec(), h.data_ptr(), uint64_t(h.nbytes()));
}

void QuarkHfExporter::copyRaw(const std::string& name) {
    const TensorInfo& info = m_source.info(name);
    spool(name, info.dtype, info.shape, m_source.fileOf(name).data(info), info.byteSize());
    m_source.fileOf(name).releasePages(info); // copied: its mapped pages need not stay resident
}

void QuarkHfExporter::writeUntil(int blockLimit) {
    while (m_next < m_names.size() && m_blockOf[m_next] < blockLimit)
        copyRaw(m_names[m_next++]);
}

void QuarkHfExporter::writeLeading() {
    writeUntil(0);
}

void QuarkHfExporter::spoolLaid(const std::string& layer, const QuarkTensor& laid,
                                const at::Tensor& t) {
    const std::string name = layer + laid.suffix;
    const at::Tensor h = toHost(t).contiguous();
    // FP8 codes arrive as their bytes (uint8); every other tensor in the layout's own dtype.
    const bool fp8Bytes = (laid.dtype == DType::F8_E4M3 || laid.dtype == DType::F8_E5M2) &&
                          h.scalar_type() == at::kByte;
    if ((!fp8Bytes && dtypeOfTensor(h, name) != laid.dtype) || uint64_t(h.nbytes()) != laid.bytes())
        throw Error(m_context.outDir, name,
                    "the exporter produced " + std::to_string(h.nbytes()) + " bytes of " +
                        std::string(c10::toString(h.scalar_type())) + " where its layout has " +
                        std::to_string(laid.bytes()) + " bytes of " + dtypeName(laid.dtype) +
                        " (exporter bug)");
    spool(name, laid.dtype, laid.shape, h.data_ptr(), laid.bytes());
}

void QuarkHfExporter::writeLinear(const LayerPlan& plan) {
    const quant::QuantizedTensor& q = *plan.weight.codes;
    const quant::QuantSpec& spec = plan.scheme->weight;
    if (const std::string r = unfitReason(*plan.scheme, plan.shape, false); !r.empty())
        throw Error(m_context.outDir, plan.name, r); // checked before the run; kept as a guard
    if (!m_firstWritten)
        m_firstWritten = *plan.scheme;
    const at::Tensor codes = toHost(q.codes);
    const at::Tensor scale = toHost(q.params.scale);
    const at::Tensor zp = q.params.zeroPoint.defined() ? toHost(q.params.zeroPoint) : at::Tensor();
    // The layout's tensors in its order; their names, dtypes and shapes come from the layout.
    std::vector<at::Tensor> data;
    if (isInt4(spec.dtype)) {
        if (spec.granularity == Granularity::PerGroup) // transposed: the out axis is packed
            data = {quant::packInt4(codes.t().contiguous(), m_order), scale.t(),
                    quant::packInt4(zp.t().contiguous(), m_order)};
        else
            data = {quant::packInt4(codes.contiguous(), m_order), scale,
                    spec.granularity == Granularity::PerTensor
                        ? zp.to(at::kInt)
                        : quant::packInt4(zp.reshape({-1}).contiguous(), m_order)};
    } else if (isInt8(spec.dtype)) {
        data = {codes.to(spec.dtype == DataType::Int8 ? at::kChar : at::kByte), scale,
                zp.to(at::kInt)};
    } else if (isMxFloat(spec.dtype)) {
        // Quark's Pack_fp4 / Pack_fp6 along the input features of [out, in] (not transposed):
        // FP4 low nibble = even element; FP6 four codes as a little-endian 24-bit word. The
        // scale is the block's E8M0 byte (the last block zero padded).
        quant::QuantizedTensor host;
        host.dtype = spec.dtype;
        host.codes = codes.to(at::kByte).contiguous();
        data = {quant::packCodes(host, m_order), q.params.scaleCodes.defined()
                                                     ? toHost(q.params.scaleCodes)
                                                     : quant::e8m0FromScale(scale)};
    } else { // fp8: the codes are the E4M3/E5M2 bytes
        data = {codes.to(at::kByte), scale};
    }
    const std::vector<QuarkTensor> layout = weightLayout(*plan.scheme, plan.shape, m_awq);
    if (layout.size() != data.size())
        throw Error(m_context.outDir, plan.name, "layout and tensors disagree (exporter bug)");
    for (size_t i = 0; i < layout.size(); ++i)
        spoolLaid(plan.name, layout[i], data[i]);
}

void QuarkHfExporter::writeActivationScales(const LayerPlan& plan) {
    auto write = [&](const std::optional<ActivationQuantizer>& a, const std::string& role) {
        if (!a || !a->isStatic())
            return;
        if (!a->isFrozen())
            throw Error(m_context.outDir, plan.name, role + " quantizer was never calibrated");
        for (const QuarkTensor& t : activationLayout(role, a->spec()))
            spoolLaid(plan.name, t,
                      t.dtype == DType::I32 ? a->params().zeroPoint.to(at::kInt)
                                            : a->params().scale);
    };
    write(plan.input, "input");
    write(plan.output, "output");
}

void QuarkHfExporter::writeExpertLinear(const LinearLayer& layer, const LayerPlan& p,
                                        at::ScalarType floatType) {
    if (p.scheme && p.weight.codes) {
        writeLinear(p);
    } else {
        m_floatLinears.push_back(p.name);
        spoolTensor(layer.name + ".weight", layer.weight.to(floatType));
    }
    if (layer.bias.defined())
        spoolTensor(layer.name + ".bias", layer.bias.to(floatType));
    writeActivationScales(p);
}

void QuarkHfExporter::writeBlock(int index, DecoderBlock& block,
                                 const std::vector<LayerPlan>& plans) {
    writeUntil(index);
    std::map<std::string, const LayerPlan*> planOf; // "<linear>.weight" -> plan
    for (const LayerPlan& p : plans)
        planOf[p.name + ".weight"] = &p;
    // The block's tensors as they are now (norms and biases too when a transform rescaled them).
    const std::map<std::string, const at::Tensor*> current = blockTensors(block, plans);
    auto sourceType = [&](const std::string& name) {
        const DType t = m_source.info(name).dtype;
        return t == DType::BF16 ? at::kBFloat16 : t == DType::F16 ? at::kHalf : at::kFloat;
    };
    // Experts stored fused (FusedExperts.h): Quark swaps them for per-expert modules before it
    // quantizes and exports those, so each expert's linears are written under their own names
    // (mlp.experts.3.gate_proj.weight, ...) in place of the stored tensors.
    std::map<std::string, std::vector<const LinearLayer*>> fused; // experts module -> linears
    for (LinearLayer* l : block.linears())
        if (!l->storedIn.empty())
            fused[l->storedIn].push_back(l);
    std::set<std::string> fusedWritten;
    while (m_next < m_names.size() && m_blockOf[m_next] == index) {
        const std::string& name = m_names[m_next++];
        const auto owner = std::find_if(fused.begin(), fused.end(), [&](const auto& f) {
            return startsWith(name, f.first + ".");
        });
        if (owner != fused.end()) {
            if (fusedWritten.insert(owner->first).second)
                for (const LinearLayer* l : owner->second)
                    writeExpertLinear(*l, *planOf.at(l->name + ".weight"),
                                      storedFloatType(m_source.info(name).dtype));
            continue;
        }
        const auto it = planOf.find(name);
        if (it == planOf.end()) {
            const auto cur = current.find(name);
            if (cur != current.end())
                spoolTensor(name, cur->second->to(sourceType(name)));
            else
                copyRaw(name);
            continue;
        }
        const LayerPlan& p = *it->second;
        if (!p.scheme)
            m_floatLinears.push_back(p.name);
        if (p.scheme && p.weight.codes) {
            writeLinear(p);
        } else if (!p.transforms.empty()) { // float weight a transform changed
            const DType t = m_source.info(name).dtype;
            spoolTensor(name, current.at(name)->to(storedFloatType(t)));
        } else {
            copyRaw(name);
        }
        writeActivationScales(p);
    }
}

void QuarkHfExporter::commit(const std::string& recipeJson) {
    while (m_next < m_names.size())
        copyRaw(m_names[m_next++]); // tensors after the blocks
    if (!m_spool.flush())
        throw Error(m_context.outDir, "tensors.spool", m_spool.errorString().toStdString());
    m_spool.close();

    // Assemble model.safetensors: names sorted (as Quark's safetensors files), bytes from the
    // spool one tensor at a time.
    std::vector<TensorInfo> layout = m_written;
    sortLayout(layout);
    {
        SafetensorsWriter writer(m_folder.tempPath(kFileName), layout, fileMetadata());
        QFile spool(m_spool.fileName());
        if (!spool.open(QIODevice::ReadOnly))
            throw Error(m_context.outDir, "tensors.spool", spool.errorString().toStdString());
        std::string buffer;
        for (const TensorInfo& t : layout) {
            buffer.resize(t.byteSize());
            if (!spool.seek(qint64(t.begin)) ||
                spool.read(buffer.data(), qint64(buffer.size())) != qint64(buffer.size()))
                throw Error(m_context.outDir, t.name, "cannot read back the spooled tensor");
            writer.writeNext(buffer.data(), buffer.size());
        }
        writer.commit();
    }
    QFile::remove(m_spool.fileName());

    // config.json: the source's, with the recipe's quantization_config.
    nlohmann::json config = ExportFolder::sourceConfig(m_context.sourceDir, m_context.headUntied);
    QuarkExportOptions options;
    options.packMethod = m_order;
    options.quarkVersion = "0.13";
    nlohmann::json qc = quarkConfigFromRecipe(*m_context.recipe, m_context.layerNames, options);
    excludeFloatLinears(qc, m_floatLinears);
    excludeFloatHead(qc);
    excludeFloatLinears(qc, m_context.fullPrecisionLinears);
    addQuark013FieldsToConfig(qc["global_quant_config"]);
    for (const char* table :
         {"layer_quant_config", "layer_type_quant_config", "kv_cache_quant_config"})
        if (qc.contains(table) && qc[table].is_object())
            for (auto& entry : qc[table].items())
                addQuark013FieldsToConfig(entry.value());
    if (m_awq) {
        // Quark's AwqConfig.to_dict() plus the export block. Bits, group size and zero point are
        // the first written layer's (the awq format's problems check refused any other).
        const std::optional<quant::QuantScheme>& first = m_firstWritten;
        if (!first)
            throw Error(m_context.outDir, "quantization_config", "awq: no quantized layer");
        nlohmann::json awq;
        awq["bits"] = 4;
        awq["group_size"] = first->weight.groupSize;
        awq["modules_to_not_convert"] = qc.value("exclude", nlohmann::json::array());
        awq["quant_method"] = "awq";
        awq["version"] = "gemm";
        awq["zero_point"] = !first->weight.symmetric;
        awq["pack_method"] = quant::packOrderName(m_order);
        awq["export"] = qc["export"];
        qc = awq;
    }
    config["quantization_config"] = qc;
    m_folder.writeText("config.json", config.dump(2) + "\n");
    m_folder.copySideFiles(m_context.sourceDir, false);
    m_folder.commit(recipeJson);
}

} // namespace qs

namespace qs {

namespace {

// A real-quantized Quark export opens as a checkpoint folder: io/QuarkFolder dequantizes its
// codes with the engine's arithmetic.
std::string openQuarkExport(const std::string& exportDir) {
    return exportDir;
}

} // namespace

namespace {

// Quark exports DBRX's experts merged back into ffn.experts.mlp.w1_weight / v1_weight /
// w2_weight with their scales stacked per expert (its ModelPostProcessor); Quantscope writes the
// per-expert layout of gpt-oss and Llama 4 only.
std::vector<std::string> fusedExpertProblems(const ExportCheck& check) {
    if (check.model && check.model->moe.storage == ExpertStorage::DbrxRows)
        return {"ffn.experts.mlp: DBRX's experts, which Quark exports merged back into w1_weight, "
                "v1_weight and w2_weight with per-expert scales, a layout Quantscope does not "
                "write yet: use --format fake"};
    return {};
}

} // namespace

FormatWriter quarkFormatWriter() {
    FormatWriter w;
    w.format = {"quark",
                "quark",
                {"hf_format"},
                "AMD Quark hf_format, real quantized (transformers + amd-quark, vLLM)",
                {},
                true};
    w.problems = [](const ExportCheck& check) {
        std::vector<std::string> out = fusedExpertProblems(check);
        for (std::string& p : layerProblems(check, [&](const ModuleNode&layer,
                                                       std::optional<quant::QuantScheme> scheme,
                                                       const std::optional<quant::QuantSpec>&kv) {
                 if (scheme && kv)
                     scheme->output = kv; // the KV-cache spec replaces the scheme's output spec
                 return scheme
                            ? QuarkHfExporter::unfitReason(*scheme, layer.shape, check.loaderLimits)
                            : QuarkHfExporter::outputReason(*kv);
             }))
            out.push_back(std::move(p));
        return out;
    };
    w.create = [](const ExportContext& context) -> std::unique_ptr<Exporter> {
        return std::make_unique<QuarkHfExporter>(context);
    };
    w.reader = openQuarkExport;
    return w;
}

// Not read back by Quantscope yet: config.json with quant_method awq is refused by name.
FormatWriter awqFormatWriter() {
    FormatWriter w;
    w.format = {
        "awq",
        "awq",
        {},
        "AMD Quark's awq custom mode: int4/uint4 per-group weights as qweight/qzeros/scales "
        "(AutoAWQ GEMM, vLLM)",
        {},
        true};
    w.problems = [](const ExportCheck& check) {
        std::optional<quant::QuantScheme> first; // the one the global config states
        return layerProblems(check,
                             [&](const ModuleNode& layer, std::optional<quant::QuantScheme> scheme,
                                 const std::optional<quant::QuantSpec>& kv) -> std::string {
                                 if (scheme && kv)
                                     scheme->output = kv;
                                 if (!scheme)
                                     return "the awq format holds weights only (no KV-cache "
                                            "scales): use --format quark";
                                 if (!first)
                                     first = scheme;
                                 return QuarkHfExporter::awqUnfitReason(*scheme, layer.shape,
                                                                        check.loaderLimits, *first);
                             });
    };
    w.create = [](const ExportContext& context) -> std::unique_ptr<Exporter> {
        return std::make_unique<QuarkHfExporter>(context, quant::PackOrder::Reorder, true);
    };
    return w;
}

} // namespace qs
