#include "export/OnnxExporter.h"
#include "export/TensorBlocks.h"

#include "model/ConfigParser.h"
#include "model/ModelFamily.h"
#include "model/Rope.h"
#include "quant/TypeTraits.h"
#include "recipe/LayerPattern.h"
#include "util/Error.h"
#include "util/HostTensor.h"
#include "util/Join.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace qs {

namespace {

using onnx::Attribute;
using onnx::ElemType;
using quant::DataType;
using quant::Granularity;

// GraphProto / ModelProto field numbers (onnx.proto).
constexpr uint32_t kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11,
                   kGraphOutput = 12;
constexpr uint32_t kModelIrVersion = 1, kModelProducerName = 2, kModelProducerVersion = 3,
                   kModelDocString = 6, kModelGraph = 7, kModelOpsetImport = 8, kModelMetadata = 14;

using quant::isFp8;
using quant::isInt4;
using quant::isInt8;

int opsetOf(const quant::QuantSpec& s) {
    if (isInt4(s.dtype) || s.granularity == Granularity::PerGroup)
        return 21;
    return isFp8(s.dtype) ? 19 : 13;
}

// IR version that introduced the opset's types: 7 (opset 13), 9 (float8, 19), 10 (int4, 21).
int irVersionFor(int opset) {
    return opset >= 21 ? 10 : opset >= 19 ? 9 : 7;
}

// Codes (int32 or uint8 bit codes) as raw_data of `type`: one byte each, or two 4-bit codes
// per byte, the first in the low nibble.
std::string rawCodes(const at::Tensor& codes, ElemType type) {
    const at::Tensor c = codes.to(at::kInt).contiguous();
    const int32_t* p = c.data_ptr<int32_t>();
    const int64_t n = c.numel();
    std::string out(onnx::rawBytes(type, n), '\0');
    if (type == ElemType::Int4 || type == ElemType::Uint4) {
        for (int64_t i = 0; i < n; ++i)
            out[size_t(i / 2)] |= char((p[i] & 0xF) << (4 * (i % 2)));
    } else {
        for (int64_t i = 0; i < n; ++i)
            out[size_t(i)] = char(uint8_t(p[i] & 0xFF));
    }
    return out;
}

std::string rawOf(const at::Tensor& t) {
    const at::Tensor h = toHost(t).contiguous();
    return std::string(static_cast<const char*>(h.data_ptr()), size_t(h.nbytes()));
}

} // namespace

std::string OnnxExporter::modelReason(const ModelConfig& c) {
    const std::string t = c.modelType;
    const ModelFamily* family = findFamily(t);
    if (!family || !family->capabilities().onnx)
        return "the ONNX exporter writes the Llama-style decoders " +
               join(familiesWith(&FamilyCapabilities::onnx), ", ", " and ") + "; '" + t +
               "' is not one of them (use --format fake or quark)";
    const DecoderLayout& L = c.layout;
    if (L.fusedQkv || L.fusedGateUp || L.sandwichNorms || L.normPlusOne || L.embedScale ||
        L.attnSoftcap > 0 || L.finalSoftcap > 0 || c.moe.numExperts > 0)
        return "'" + t +
               "' has a layout the ONNX exporter does not write (fused projections, "
               "Gemma norms, soft-capping or experts)";
    if (c.hiddenAct != "silu" && c.hiddenAct != "swish")
        return "hidden_act '" + c.hiddenAct + "' is not written (silu only)";
    if (c.rope.type == "dynamic" || c.rope.type == "longrope")
        return "rope_scaling '" + c.rope.type +
               "' depends on the sequence length; the graph's RoPE tables are fixed";
    if (c.rope.partialRotaryFactor != 1.0 || c.slidingRope)
        return "partial or per-layer rotary embeddings are not written";
    return {};
}

std::string OnnxExporter::activationReason(const quant::QuantSpec& s, const std::string& role) {
    const std::string type = quant::dataTypeName(s.dtype);
    if (s.isDynamic)
        return "dynamic " + role +
               " quantization (parameters computed on every call) has no QDQ form with stored "
               "parameters; ONNX's DynamicQuantizeLinear is uint8 per tensor with its own "
               "rounding: use a static or weight-only scheme";
    if (s.granularity != Granularity::PerTensor)
        return "static " + quant::granularityName(s.granularity) + " " + role +
               " quantization is not written (per_tensor is)";
    if (!isInt4(s.dtype) && !isInt8(s.dtype) && !isFp8(s.dtype))
        return type + " " + role + " quantization has no ONNX QuantizeLinear type";
    return {};
}

std::string OnnxExporter::unfitReason(const quant::QuantScheme& scheme) {
    if (scheme.weightPreStage)
        return "progressive weights (" + scheme.label() +
               ") exist only as fake quantization in Quantscope: use --format fake";
    const quant::QuantSpec& w = scheme.weight;
    const std::string type = quant::dataTypeName(w.dtype);
    if (!isInt4(w.dtype) && !isInt8(w.dtype) && !isFp8(w.dtype))
        return type +
               " weights have no ONNX DequantizeLinear type (ONNX holds int4, uint4, int8, uint8, "
               "float8 e4m3fn/e5m2; onnxruntime has no CPU kernel for FLOAT4E2M1 and ONNX no "
               "E8M0 block scales): use --format fake or quark";
    if (w.scaleType == quant::ScaleType::E8M0 || w.scaleType == quant::ScaleType::E4M3)
        return type + " weights with " + (w.scaleType == quant::ScaleType::E8M0 ? "e8m0" : "e4m3") +
               " scales have no ONNX form (DequantizeLinear scales are float)";
    if (w.granularity == Granularity::PerGroup) {
        if (w.chAxis != -1 && w.chAxis != 1)
            return "per-group weights along ch_axis " + std::to_string(w.chAxis) +
                   " are not written (groups along the input features, ch_axis -1, are)";
        if (isFp8(w.dtype))
            return "fp8 per-group weights are not written (per_tensor and per_channel are)";
    } else if (w.granularity != Granularity::PerTensor &&
               w.granularity != Granularity::PerChannel) {
        return type + " " + quant::granularityName(w.granularity) +
               " weights have no DequantizeLinear form";
    }
    if (scheme.input)
        if (std::string r = activationReason(*scheme.input, "input"); !r.empty())
            return r;
    if (scheme.output)
        if (std::string r = activationReason(*scheme.output, "output"); !r.empty())
            return r;
    return {};
}

int OnnxExporter::opsetFor(const quant::QuantScheme& scheme) {
    int opset = opsetOf(scheme.weight);
    if (scheme.input)
        opset = std::max(opset, opsetOf(*scheme.input));
    if (scheme.output)
        opset = std::max(opset, opsetOf(*scheme.output));
    return opset;
}

OnnxExporter::OnnxExporter(const ExportContext& context)
    : m_context(context), m_config(loadModelConfig(context.sourceDir)), m_folder(context.outDir) {
    if (const std::string r = modelReason(m_config); !r.empty())
        throw Error(context.sourceDir + "/config.json", "model_type", r);
    for (const std::string& name : context.layerNames) {
        const std::string kind = layerKindOf(name);
        std::optional<quant::QuantScheme> s = context.recipe->schemeFor(name, kind);
        if (const std::optional<quant::QuantSpec> kv = context.recipe->kvOutputFor(name, kind))
            m_opset = std::max(m_opset, opsetOf(*kv));
        if (s)
            m_opset = std::max(m_opset, opsetFor(*s));
    }
    m_tableRows = tableRows(m_config);
    m_external = usesExternalData(*context.source);
    if (m_external) {
        m_data.setFileName(QString::fromStdString(m_folder.tempPath(kDataFile)));
        if (!m_data.open(QIODevice::WriteOnly))
            throw Error(context.outDir, kDataFile,
                        "cannot create: " + m_data.errorString().toStdString());
    }
    m_spool.setFileName(QString::fromStdString(m_folder.tempPath("graph.spool")));
    if (!m_spool.open(QIODevice::WriteOnly))
        throw Error(context.outDir, "graph.spool",
                    "cannot create: " + m_spool.errorString().toStdString());
}

OnnxExporter::~OnnxExporter() = default;

void OnnxExporter::field(uint32_t number, const std::string& payload) {
    const std::string prefix = ProtoWriter::lengthPrefix(number, payload.size());
    m_graphBytes += prefix.size() + payload.size();
    if (m_graphBytes > kMaxProtoBytes)
        throw Error(m_context.outDir, "model.onnx",
                    std::string("the graph exceeds protobuf's 2 GiB message limit") +
                        (m_external ? ""
                                    : " (set QS_ONNX_EXTERNAL_DATA=1 to keep the weights in " +
                                          std::string(kDataFile) + ")"));
    if (m_spool.write(prefix.data(), qint64(prefix.size())) != qint64(prefix.size()) ||
        m_spool.write(payload.data(), qint64(payload.size())) != qint64(payload.size()))
        throw Error(m_context.outDir, "graph.spool",
                    "cannot write: " + m_spool.errorString().toStdString());
}

void OnnxExporter::emit(const std::string& opType, const std::vector<std::string>& inputs,
                        const std::string& output, const std::vector<Attribute>& attributes) {
    if (!m_names.insert(output).second)
        throw Error("onnx", output, "written twice (exporter bug)");
    field(kGraphNode, onnx::nodeProto(opType, inputs, {output}, output, attributes));
}

void OnnxExporter::initializer(const std::string& name, ElemType type,
                               const std::vector<int64_t>& dims, const std::string& raw) {
    if (!m_names.insert(name).second)
        throw Error("onnx", name, "written twice (exporter bug)");
    if (!m_external || raw.size() < kExternalMinBytes) {
        field(kGraphInitializer, onnx::tensorProto(name, type, dims, raw));
        return;
    }
    const uint64_t offset = (uint64_t(m_data.pos()) + 4095) / 4096 * 4096;
    const std::string pad(offset - uint64_t(m_data.pos()), '\0');
    if (m_data.write(pad.data(), qint64(pad.size())) != qint64(pad.size()) ||
        m_data.write(raw.data(), qint64(raw.size())) != qint64(raw.size()))
        throw Error(m_context.outDir, kDataFile,
                    "cannot write: " + m_data.errorString().toStdString());
    field(kGraphInitializer,
          onnx::externalTensorProto(name, type, dims, kDataFile, offset, raw.size()));
}

void OnnxExporter::laidInitializer(const OnnxTensor& t, const std::string& raw) {
    if (raw.size() != t.bytes())
        throw Error(m_context.outDir, t.name,
                    "the exporter produced " + std::to_string(raw.size()) +
                        " bytes where its layout has " + std::to_string(t.bytes()) +
                        " (exporter bug)");
    initializer(t.name, t.type, t.dims, raw);
}

void OnnxExporter::floatInitializer(const std::string& name, const at::Tensor& t) {
    initializer(name, ElemType::Float, t.sizes().vec(), rawOf(t.to(at::kFloat)));
}

std::string OnnxExporter::constInts(const std::vector<int64_t>& values, bool scalar) {
    std::string name = scalar ? "/const/i64" : "/const/i64x";
    for (int64_t v : values)
        name += "_" + std::to_string(v);
    if (!m_names.count(name))
        initializer(name, ElemType::Int64,
                    scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(values.size())},
                    std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
    return name;
}

std::string OnnxExporter::constFloat(float value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", double(value));
    const std::string name = std::string("/const/f32_") + text;
    if (!m_names.count(name))
        initializer(name, ElemType::Float, {},
                    std::string(reinterpret_cast<const char*>(&value), 4));
    return name;
}

std::string OnnxExporter::sourceFloat(const std::string& tensorName) {
    if (m_names.count(tensorName))
        return tensorName;
    if (m_blockTensors) {
        const auto it = m_blockTensors->find(tensorName);
        if (it != m_blockTensors->end()) {
            floatInitializer(tensorName, toHost(*it->second));
            return tensorName;
        }
    }
    floatInitializer(tensorName,
                     loadTensor(*m_context.source, tensorName, at::kFloat, at::Device(at::kCPU)));
    return tensorName;
}

// x * (1 / sqrt(mean(x * x) + eps)) * w over the last axis: the engine's rmsNorm (ATen's rsqrt
// is 1/sqrt; x.pow(2) is x * x).
std::string OnnxExporter::rmsNorm(const std::string& x, const std::string& weight,
                                  const std::string& out) {
    emit("Mul", {x, x}, out + "/square");
    if (m_opset >= 18)
        emit("ReduceMean", {out + "/square", constInts({-1})}, out + "/mean",
             {{"keepdims", int64_t(1)}});
    else
        emit("ReduceMean", {out + "/square"}, out + "/mean",
             {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}});
    emit("Add", {out + "/mean", constFloat(float(m_config.normEps))}, out + "/var");
    emit("Sqrt", {out + "/var"}, out + "/std");
    emit("Reciprocal", {out + "/std"}, out + "/rstd");
    emit("Mul", {x, out + "/rstd"}, out + "/normed");
    emit("Mul", {sourceFloat(weight), out + "/normed"}, out);
    return out;
}

// x * cos + rotate_half(x) * sin on [B, heads, S, head_dim], rotate_half(x) = [-x2, x1].
std::string OnnxExporter::rope(const std::string& x, const std::string& out) {
    const int64_t half = m_config.headDim / 2;
    emit("Slice", {x, constInts({0}), constInts({half}), constInts({3})}, out + "/x1");
    emit("Slice", {x, constInts({half}), constInts({m_config.headDim}), constInts({3})},
         out + "/x2");
    emit("Neg", {out + "/x2"}, out + "/neg_x2");
    emit("Concat", {out + "/neg_x2", out + "/x1"}, out + "/rotated", {{"axis", int64_t(3)}});
    emit("Mul", {x, "/rope/cos"}, out + "/x_cos");
    emit("Mul", {out + "/rotated", "/rope/sin"}, out + "/rot_sin");
    emit("Add", {out + "/x_cos", out + "/rot_sin"}, out);
    return out;
}

// [B, kv, S, d] -> [B, kv * groups, S, d] with query head h reading KV head h / groups.
std::string OnnxExporter::repeatKv(const std::string& x, const std::string& out) {
    const int64_t groups = m_config.numHeads / m_config.numKvHeads;
    if (groups == 1)
        return x;
    emit("Unsqueeze", {x, constInts({2})}, out + "/unsqueezed");
    emit("Expand", {out + "/unsqueezed", constInts({1, 1, groups, 1, 1})}, out + "/expanded");
    emit("Reshape", {out + "/expanded", constInts({0, m_config.numHeads, -1, m_config.headDim})},
         out);
    return out;
}

std::string OnnxExporter::quantizeDequantize(const std::string& x, const ActivationQuantizer& q,
                                             const std::string& prefix) {
    if (!q.isFrozen())
        throw Error(m_context.outDir, prefix, "activation quantizer was never calibrated");
    const quant::QuantSpec& s = q.spec();
    const ElemType type = elemType(s.dtype);
    const float scale = toHost(q.params().scale).to(at::kFloat).reshape({}).item<float>();
    const std::vector<OnnxTensor> layout = activationLayout(prefix, s);
    laidInitializer(layout[0], std::string(reinterpret_cast<const char*>(&scale), 4));
    // The zero point fixes QuantizeLinear's output type; fp8 zero points are +0.
    const int32_t zp = isFp8(s.dtype) ? 0 : toHost(q.params().zeroPoint).reshape({}).item<int>();
    laidInitializer(layout[1], rawCodes(at::scalar_tensor(zp, at::kInt), type));
    emit("QuantizeLinear", {x, prefix + "_scale", prefix + "_zero_point"}, prefix + "/quantized");
    emit("DequantizeLinear", {prefix + "/quantized", prefix + "_scale", prefix + "_zero_point"},
         prefix + "/dequantized");
    return prefix + "/dequantized";
}

// The plan's codes transposed to [in, out] with their scales and zero points, dequantized.
std::string OnnxExporter::weightDequantized(const LayerPlan& plan) {
    const quant::QuantizedTensor& q = *plan.weight.codes;
    const quant::QuantSpec& spec = plan.scheme->weight;
    if (opsetFor(*plan.scheme) > m_opset)
        throw Error(m_context.outDir, plan.name,
                    "needs opset " + std::to_string(opsetFor(*plan.scheme)) +
                        " but the graph was started at " + std::to_string(m_opset));
    const std::string n = plan.name;
    const int64_t out = plan.shape[0], in = plan.shape[1];
    const ElemType type = elemType(spec.dtype);
    const std::vector<OnnxTensor> layout = weightLayout(n, *plan.scheme, plan.shape);
    const at::Tensor codes = toHost(q.codes).t().contiguous();
    laidInitializer(layout[0], rawCodes(codes, type));
    at::Tensor scale = toHost(q.params.scale).to(at::kFloat);
    at::Tensor zp = q.params.zeroPoint.defined() ? toHost(q.params.zeroPoint) : at::Tensor();
    std::vector<Attribute> attributes;
    if (spec.granularity == Granularity::PerChannel) {
        attributes.push_back({"axis", int64_t(spec.chAxis == 0 ? 1 : 0)}); // of [in, out]
    } else if (spec.granularity == Granularity::PerGroup) { // blocks along axis 0 of [in, out]
        const int64_t groups = (in + spec.groupSize - 1) / spec.groupSize;
        scale = scale.reshape({out, groups}).t().contiguous();
        zp = zp.defined() ? zp.reshape({out, groups}).t().contiguous() : zp;
        attributes.push_back({"axis", int64_t(0)});
        attributes.push_back({"block_size", int64_t(spec.groupSize)});
    }
    laidInitializer(layout[1], rawOf(scale.contiguous()));
    std::vector<std::string> inputs = {layout[0].name, layout[1].name};
    if (layout.size() > 2) { // zero points: none for fp8
        laidInitializer(layout[2], rawCodes(zp.contiguous(), type));
        inputs.push_back(layout[2].name);
    }
    emit("DequantizeLinear", inputs, n + "/weight", attributes);
    return n + "/weight";
}

std::string OnnxExporter::linear(const LinearLayer& layer, const LayerPlan* plan,
                                 const std::string& x) {
    const std::string& n = layer.name;
    std::string input = x;
    if (plan &&
        ((plan->input && !plan->input->isStatic()) || (plan->output && !plan->output->isStatic())))
        throw Error(m_context.outDir, n, "dynamic activation quantization has no QDQ form");
    if (plan && plan->scheme && plan->input)
        input = quantizeDequantize(x, *plan->input, n + ".input");
    std::string weight;
    if (plan && plan->scheme && plan->weight.codes) {
        weight = weightDequantized(*plan);
    } else {
        weight = n + ".weight_transposed";
        floatInitializer(weight, toHost(layer.weight).to(at::kFloat).t().contiguous());
    }
    std::string y = n + "/output";
    emit("MatMul", {input, weight}, y);
    if (layer.bias.defined()) {
        floatInitializer(n + ".bias", toHost(layer.bias));
        emit("Add", {y, n + ".bias"}, n + "/biased");
        y = n + "/biased";
    }
    if (plan && plan->output)
        y = quantizeDequantize(y, *plan->output, n + ".output");
    return y;
}

void OnnxExporter::writeLeading() {
    // Sequence length, positions, the causal (and sliding-window) masks and the RoPE rows.
    emit("Shape", {"input_ids"}, "/shape");
    emit("Slice", {"/shape", constInts({1}), constInts({2}), constInts({0})}, "/seq_len_1d");
    emit("Squeeze", {"/seq_len_1d", constInts({0})}, "/seq_len");
    emit("Range", {constInts({0}, true), "/seq_len", constInts({1}, true)}, "/positions");
    emit("Unsqueeze", {"/positions", constInts({1})}, "/rows");
    emit("Unsqueeze", {"/positions", constInts({0})}, "/cols");
    emit("Sub", {"/rows", "/cols"}, "/distance"); // i - j
    emit("Less", {"/distance", constInts({0}, true)}, "/future");
    const std::string minusInf = constFloat(-std::numeric_limits<float>::infinity());
    emit("Where", {"/future", minusInf, constFloat(0.0f)}, "/mask");
    if (m_config.slidingWindow > 0) {
        // Token i sees j in (i - window, i], as the engine's slidingMask.
        emit("Greater", {"/distance", constInts({m_config.slidingWindow - 1}, true)}, "/far");
        emit("Or", {"/future", "/far"}, "/outside_window");
        emit("Where", {"/outside_window", minusInf, constFloat(0.0f)}, "/sliding_mask");
    }
    // The engine's rotaryTables for the first m_tableRows positions.
    const RotaryFrequencies f = rotaryFrequencies(
        m_config.rope, m_config.headDim, m_config.maxPositions, m_tableRows, m_config.source);
    const at::Tensor positions = at::arange(m_tableRows, at::kLong).to(at::kFloat);
    const at::Tensor freqs = at::outer(positions, f.inverse.to(at::kFloat).cpu());
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    at::Tensor cos = emb.cos(), sin = emb.sin();
    if (f.attentionScaling != 1.0) {
        cos = cos * f.attentionScaling;
        sin = sin * f.attentionScaling;
    }
    floatInitializer("rope.cos_table", cos);
    floatInitializer("rope.sin_table", sin);
    emit("Slice", {"rope.cos_table", constInts({0}), "/seq_len_1d", constInts({0})}, "/rope/cos");
    emit("Slice", {"rope.sin_table", constInts({0}), "/seq_len_1d", constInts({0})}, "/rope/sin");

    emit("Gather", {sourceFloat("model.embed_tokens.weight"), "input_ids"}, "/embedded",
         {{"axis", int64_t(0)}});
    m_hidden = "/embedded";
}

void OnnxExporter::writeBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans) {
    const std::string p = "model.layers." + std::to_string(index) + ".";
    const std::string b = "/layers." + std::to_string(index);
    std::map<std::string, const LinearLayer*> layers;
    for (LinearLayer* l : block.linears())
        layers[l->kind] = l;
    std::map<std::string, const LayerPlan*> planOf;
    for (const LayerPlan& plan : plans)
        planOf[plan.name] = &plan;
    auto apply = [&](const std::string& kind, const std::string& x) {
        const auto it = layers.find(kind);
        if (it == layers.end())
            throw Error(m_context.sourceDir, p + kind, "missing from the block");
        const auto pl = planOf.find(it->second->name);
        return linear(*it->second, pl == planOf.end() ? nullptr : pl->second, x);
    };
    const int64_t nh = m_config.numHeads, nkv = m_config.numKvHeads, hd = m_config.headDim;
    const std::map<std::string, const at::Tensor*> current = blockTensors(block, plans);
    m_blockTensors = &current;

    const std::string h = rmsNorm(m_hidden, p + "input_layernorm.weight", b + "/input_norm");
    const std::string q = apply("q_proj", h), k = apply("k_proj", h), v = apply("v_proj", h);
    emit("Reshape", {q, constInts({0, 0, nh, hd})}, b + "/q_heads");
    emit("Reshape", {k, constInts({0, 0, nkv, hd})}, b + "/k_heads");
    emit("Reshape", {v, constInts({0, 0, nkv, hd})}, b + "/v_heads");
    std::string qh = b + "/q_heads", kh = b + "/k_heads";
    if (m_config.layout.qkNorm) { // Qwen3: per-head RMSNorm over head_dim before RoPE
        qh = rmsNorm(qh, p + "self_attn.q_norm.weight", b + "/q_norm");
        kh = rmsNorm(kh, p + "self_attn.k_norm.weight", b + "/k_norm");
    }
    const std::vector<int64_t> swap = {0, 2, 1, 3};
    emit("Transpose", {qh}, b + "/q", {{"perm", swap}});
    emit("Transpose", {kh}, b + "/k", {{"perm", swap}});
    emit("Transpose", {b + "/v_heads"}, b + "/v", {{"perm", swap}});
    const std::string qr = rope(b + "/q", b + "/q_rope");
    const std::string kr = repeatKv(rope(b + "/k", b + "/k_rope"), b + "/k_repeated");
    const std::string vr = repeatKv(b + "/v", b + "/v_repeated");
    emit("Transpose", {kr}, b + "/k_t", {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    emit("MatMul", {qr, b + "/k_t"}, b + "/scores");
    const double scale =
        m_config.layout.attnScale > 0 ? m_config.layout.attnScale : 1.0 / std::sqrt(double(hd));
    emit("Mul", {b + "/scores", constFloat(float(scale))}, b + "/scaled");
    emit("Add", {b + "/scaled", m_config.slides(index) ? "/sliding_mask" : "/mask"}, b + "/masked");
    emit("Softmax", {b + "/masked"}, b + "/probs", {{"axis", int64_t(-1)}});
    emit("MatMul", {b + "/probs", vr}, b + "/context");
    emit("Transpose", {b + "/context"}, b + "/context_t", {{"perm", swap}});
    emit("Reshape", {b + "/context_t", constInts({0, 0, nh * hd})}, b + "/attn_in");
    emit("Add", {m_hidden, apply("o_proj", b + "/attn_in")}, b + "/residual");

    const std::string h2 =
        rmsNorm(b + "/residual", p + "post_attention_layernorm.weight", b + "/post_attn_norm");
    const std::string g = apply("gate_proj", h2);
    emit("Sigmoid", {g}, b + "/gate_sigmoid");
    emit("Mul", {g, b + "/gate_sigmoid"}, b + "/gate_silu");
    emit("Mul", {b + "/gate_silu", apply("up_proj", h2)}, b + "/mlp_in");
    emit("Add", {b + "/residual", apply("down_proj", b + "/mlp_in")}, b + "/output");
    m_hidden = b + "/output";
    m_blockTensors = nullptr;
    m_spool.flush();
}

void OnnxExporter::commit(const std::string& recipeJson) {
    const std::string h = rmsNorm(m_hidden, "model.norm.weight", "/final_norm");
    std::string head;
    if (m_config.tieWordEmbeddings && !m_context.headUntied) {
        emit("Transpose", {"model.embed_tokens.weight"}, "/lm_head_weight",
             {{"perm", std::vector<int64_t>{1, 0}}});
        head = "/lm_head_weight";
    } else {
        head = "lm_head.weight_transposed";
        floatInitializer(
            head, loadTensor(*m_context.source, "lm_head.weight", at::kFloat, at::Device(at::kCPU))
                      .t()
                      .contiguous());
    }
    emit("MatMul", {h, head}, "logits");
    field(kGraphInput, onnx::valueInfo("input_ids", ElemType::Int64,
                                       {std::string("batch"), std::string("sequence")}));
    field(kGraphOutput,
          onnx::valueInfo("logits", ElemType::Float,
                          {std::string("batch"), std::string("sequence"), m_config.vocabSize}));
    {
        ProtoWriter name;
        name.bytes(kGraphName, "quantscope_" + m_config.modelType);
        const std::string& d = name.data();
        m_graphBytes += d.size();
        if (m_spool.write(d.data(), qint64(d.size())) != qint64(d.size()) || !m_spool.flush())
            throw Error(m_context.outDir, "graph.spool", m_spool.errorString().toStdString());
    }
    m_spool.close();
    if (m_external && !m_data.flush())
        throw Error(m_context.outDir, kDataFile, m_data.errorString().toStdString());
    m_data.close();

    ProtoWriter model;
    model.varint(kModelIrVersion, uint64_t(irVersionFor(m_opset)));
    model.bytes(kModelProducerName, "Quantscope");
    model.bytes(kModelProducerVersion, "1");
    model.bytes(kModelDocString,
                "Causal LM logits, no KV cache; inputs up to " + std::to_string(m_tableRows) +
                    " tokens (RoPE table rows). Recipe in quantscope_recipe.json.");
    ProtoWriter opset;
    opset.bytes(1, "");
    opset.varint(2, uint64_t(m_opset));
    model.message(kModelOpsetImport, opset);
    ProtoWriter meta;
    meta.bytes(1, "max_sequence_length");
    meta.bytes(2, std::to_string(m_tableRows));
    model.message(kModelMetadata, meta);
    const std::string head0 = model.data() + ProtoWriter::lengthPrefix(kModelGraph, m_graphBytes);
    if (head0.size() + m_graphBytes > kMaxProtoBytes)
        throw Error(m_context.outDir, "model.onnx", "exceeds protobuf's 2 GiB message limit");

    QFile out(QString::fromStdString(m_folder.tempPath("model.onnx")));
    QFile spool(m_spool.fileName());
    if (!out.open(QIODevice::WriteOnly) || !spool.open(QIODevice::ReadOnly))
        throw Error(m_context.outDir, "model.onnx",
                    "cannot write: " + out.errorString().toStdString());
    bool ok = out.write(head0.data(), qint64(head0.size())) == qint64(head0.size());
    std::string buffer(size_t(1) << 22, '\0');
    while (ok && !spool.atEnd()) {
        const qint64 n = spool.read(buffer.data(), qint64(buffer.size()));
        ok = n > 0 && out.write(buffer.data(), n) == n;
    }
    ok = ok && out.flush();
    if (!ok)
        throw Error(m_context.outDir, "model.onnx",
                    "cannot write: " + out.errorString().toStdString());
    out.close();
    spool.close();
    QFile::remove(spool.fileName());
    m_folder.copySideFiles(m_context.sourceDir, true, m_context.headUntied);
    m_folder.commit(recipeJson);
}

} // namespace qs
