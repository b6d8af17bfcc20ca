#include "model/QuarkFolder.h"
#include "io/JsonFields.h"
#include "io/TensorDType.h"
#include "model/ConfigParser.h"
#include "model/FusedExperts.h"

#include "quant/Packing.h"
#include "quant/Quantize.h"
#include "quant/TypeTraits.h"
#include "recipe/LayerPattern.h"
#include "recipe/QuarkConfig.h"
#include "util/Error.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace qs {

namespace {

using quant::DataType;
using quant::Granularity;

bool isMxFloat(DataType t) {
    return t == DataType::MxFp4 || t == DataType::MxFp6E3M2 || t == DataType::MxFp6E2M3;
}

nlohmann::json readConfig(const std::string& directory) {
    const std::string path = directory + "/config.json";
    if (!QFileInfo(QString::fromStdString(path)).isFile())
        return {};
    return parseJsonText(readTextFile(path), path); // size and depth limits, syntax errors named
}

// The string `key` of `object`, `fallback` when absent or null; another type is named (`field`
// is its path in config.json).
std::string stringField(const nlohmann::json& object, const char* key, const std::string& fallback,
                        const std::string& path, const std::string& field) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (!it->is_string())
        throw Error(path, field, std::string("expected a string, got ") + it->type_name());
    return it->get<std::string>();
}

bool isRealQuantized(const nlohmann::json& config, const std::string& path) {
    if (!config.is_object())
        return false;
    const auto qc = config.find("quantization_config");
    if (qc == config.end() || !qc->is_object() ||
        stringField(*qc, "quant_method", "", path, "quantization_config.quant_method") != "quark")
        return false;
    const auto exp = qc->find("export");
    if (exp == qc->end())
        return true; // Quark's default weight_format
    return exp->is_object() &&
           stringField(*exp, "weight_format", "real_quantized", path,
                       "quantization_config.export.weight_format") == "real_quantized";
}

// export.pack_method of a real-quantized config (isRealQuantized: the blocks are objects).
std::string packMethodOf(const nlohmann::json& config, const std::string& path) {
    const nlohmann::json& qc = config.at("quantization_config");
    const auto exp = qc.find("export");
    return exp == qc.end() ? std::string("reorder")
                           : stringField(*exp, "pack_method", "reorder", path,
                                         "quantization_config.export.pack_method");
}

bool isFloat(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s;
    for (int64_t d : shape)
        s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
}

at::ScalarType scalarOf(DType t, const std::string& file, const std::string& name) {
    if (t == DType::F8_E4M3 || t == DType::F8_E5M2)
        return at::kByte; // FP8 codes are decoded from their bytes (quant::dequantize)
    const std::optional<at::ScalarType> dense = denseScalarType(t);
    if (!dense)
        throw Error(file, name, "dtype " + dtypeName(t) + " is not read from Quark exports");
    return *dense;
}

at::Tensor read(const Checkpoint& c, const std::string& name) {
    const TensorInfo& info = c.info(name);
    const std::string file = c.fileOf(name).path();
    return at::from_blob(const_cast<uint8_t*>(c.fileOf(name).data(info)), info.shape,
                         scalarOf(info.dtype, file, name))
        .clone();
}

// One stored tensor of a quantized linear: its dtype must be one of `dtypes` and its shape
// `shape`. Checked from the header before any data is read or anything is written.
void expectTensor(const Checkpoint& c, const std::string& name, std::initializer_list<DType> dtypes,
                  const std::vector<int64_t>& shape, const std::string& role) {
    const TensorInfo& t = c.info(name);
    const std::string file = c.fileOf(name).path();
    if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
        std::string allowed;
        for (DType d : dtypes)
            allowed += (allowed.empty() ? "" : " or ") + dtypeName(d);
        throw Error(file, name, "stored as " + dtypeName(t.dtype) + "; " + role + " is " + allowed);
    }
    if (t.shape != shape)
        throw Error(file, name,
                    "shape " + shapeText(t.shape) +
                        " does not match the layer's scheme (expected " + shapeText(shape) + ")");
}

int64_t words(int64_t n) { // int32 words holding n int4 codes, without overflow
    return n / 8 + (n % 8 != 0);
}

// [out, in] of the float weight of one quantized linear, from its stored tensors, after checking
// every one of them (dtype and shape) against the layer's scheme. Errors name the file, the
// tensor and the reason; nothing is read but headers, and every accepted shape is bounded by the
// stored bytes, so a hostile shape cannot ask for a huge dequantized tensor.
std::pair<int64_t, int64_t> checkQuantizedLinear(const Checkpoint& c, const std::string& layer,
                                                 const quant::QuantScheme& scheme,
                                                 const std::string& configPath) {
    const quant::QuantSpec& spec = scheme.weight;
    const std::string w = layer + ".weight", s = layer + ".weight_scale",
                      z = layer + ".weight_zero_point";
    const std::string file = c.fileOf(w).path();
    const TensorInfo& wi = c.info(w);
    const bool int4 = quant::isInt4(spec.dtype);
    if (scheme.weightPreStage)
        throw Error(configPath, layer,
                    "progressive weights (" + scheme.label() + ") are not read from Quark exports");
    if (isMxFloat(spec.dtype)) {
        // Not transposed: [out, in/2] codes for FP4 (two per byte), [out, in/4*3] for FP6 (four
        // per three bytes); one E8M0 byte per block of 32 inputs and row.
        const bool fp4 = spec.dtype == DataType::MxFp4;
        if (wi.shape.size() != 2 || wi.shape[0] < 1 || wi.shape[1] < 1 ||
            (!fp4 && wi.shape[1] % 3 != 0))
            throw Error(file, w,
                        "packed " + quant::dataTypeName(spec.dtype) + " weight has shape " +
                            shapeText(wi.shape) +
                            (fp4 ? " (expected [out, in/2])" : " (expected [out, in/4*3])"));
        const int64_t out = wi.shape[0], in = fp4 ? wi.shape[1] * 2 : wi.shape[1] / 3 * 4;
        expectTensor(c, w, {DType::U8}, {out, wi.shape[1]},
                     "a packed " + quant::dataTypeName(spec.dtype) + " weight");
        expectTensor(c, s, {DType::U8}, {out, (in + 31) / 32}, "E8M0 weight scales");
        return {out, in};
    }
    if (!int4 && !quant::isInt8(spec.dtype) && !quant::isFp8(spec.dtype))
        throw Error(file, w,
                    quant::dataTypeName(spec.dtype) +
                        " weights are not read from Quark exports (int4, uint4, int8, uint8, "
                        "fp8_e4m3, fp8_e5m2, mxfp4 and mxfp6 are)");
    const Granularity g = spec.granularity;
    if (g == Granularity::PerChannel && spec.chAxis != 0 && spec.chAxis != -2)
        throw Error(configPath, layer,
                    "per_channel weights along ch_axis " + std::to_string(spec.chAxis) +
                        " have no Quark layout (channels are the outputs, axis 0)");
    if (g == Granularity::PerGroup && spec.chAxis != -1 && spec.chAxis != 1)
        throw Error(configPath, layer,
                    "per_group weights along ch_axis " + std::to_string(spec.chAxis) +
                        " have no Quark layout (groups run along the inputs, axis -1)");
    if (g == Granularity::PerToken)
        throw Error(configPath, layer, "per_token is for activations, not stored weights");
    if (wi.shape.size() != 2 || wi.shape[0] < 1 || wi.shape[1] < 1)
        throw Error(file, w,
                    "quantized weight is not a non-empty 2-D tensor (shape " + shapeText(wi.shape) +
                        ")");
    const TensorInfo& si = c.info(s);
    int64_t out = wi.shape[0], in = wi.shape[1];
    if (int4 && g == Granularity::PerGroup) { // stored transposed: [in, words(out)]
        if (si.shape.size() != 2 || si.shape[1] < 1)
            throw Error(c.fileOf(s).path(), s,
                        "per_group scales are [in / group_size, out], got " + shapeText(si.shape));
        in = wi.shape[0];
        out = si.shape[1];
    } else if (int4) {
        in = wi.shape[1] * 8; // bounded by the file: no overflow. The padding is checked against
                              // the config's in_features by the model's shape validation.
    }
    const int64_t groups = g == Granularity::PerGroup ? in / spec.groupSize : 0;
    if (g == Granularity::PerGroup && in % spec.groupSize != 0)
        throw Error(file, w,
                    std::to_string(in) + " inputs are not a whole number of groups of " +
                        std::to_string(spec.groupSize));
    const std::vector<int64_t> params = g == Granularity::PerTensor ? std::vector<int64_t>{}
                                        : g == Granularity::PerChannel
                                            ? std::vector<int64_t>{out}
                                            : std::vector<int64_t>{out, groups};
    const auto floats = {DType::F32, DType::F16, DType::BF16};
    const std::string scaleRole = "a weight scale";
    const std::string zpRole = "a weight zero point";
    if (int4 && g == Granularity::PerGroup) {
        expectTensor(c, w, {DType::I32}, {in, words(out)}, "an int4 weight (8 codes per word)");
        expectTensor(c, s, floats, {groups, out}, scaleRole);
        expectTensor(c, z, {DType::I32}, {groups, words(out)},
                     zpRole + " (packed like the weight)");
    } else if (int4) {
        expectTensor(c, w, {DType::I32}, {out, words(in)}, "an int4 weight (8 codes per word)");
        expectTensor(c, s, floats, params, scaleRole);
        expectTensor(c, z, {DType::I32},
                     g == Granularity::PerTensor ? std::vector<int64_t>{}
                                                 : std::vector<int64_t>{words(out)},
                     zpRole);
    } else if (quant::isInt8(spec.dtype)) {
        expectTensor(c, w, {spec.dtype == DataType::Int8 ? DType::I8 : DType::U8}, {out, in},
                     "an " + quant::dataTypeName(spec.dtype) + " weight");
        expectTensor(c, s, floats, params, scaleRole);
        expectTensor(c, z, {DType::I32, DType::I8, DType::U8}, params, zpRole);
    } else {
        expectTensor(c, w,
                     {spec.dtype == DataType::Fp8E4M3 ? DType::F8_E4M3 : DType::F8_E5M2, DType::U8},
                     {out, in}, "an " + quant::dataTypeName(spec.dtype) + " weight");
        expectTensor(c, s, floats, params, scaleRole);
    }
    return {out, in};
}

// The float weight [out, in] of one quantized linear whose tensors checkQuantizedLinear accepted.
at::Tensor dequantizeLinear(const Checkpoint& c, const std::string& layer,
                            const quant::QuantSpec& spec, quant::PackOrder order, int64_t out,
                            int64_t in, at::ScalarType outDtype) {
    quant::QuantizedTensor q;
    q.dtype = spec.dtype;
    const at::Tensor packed = read(c, layer + ".weight");
    const at::Tensor scale = read(c, layer + ".weight_scale");
    if (isMxFloat(spec.dtype)) {
        // uint8 [out, in/2] (FP4) or [out, in/4*3] (FP6) codes, uint8 E8M0 [out, ceil(in/32)]
        // (shapes and dtypes checked by checkQuantizedLinear).
        q.codes = quant::unpackCodes(packed, spec.dtype, in);
        q.params.scale = quant::scaleFromE8m0(scale);
        q.params.zeroPoint = at::zeros(scale.sizes(), at::kInt);
        return quant::dequantize(q, spec, outDtype);
    }
    const bool isInt = quant::isInteger(spec.dtype);
    const at::Tensor zp = isInt ? read(c, layer + ".weight_zero_point") : at::Tensor();
    const bool isSigned = spec.dtype == DataType::Int4 || spec.dtype == DataType::Int8;
    if (quant::isInt4(spec.dtype) && spec.granularity == Granularity::PerGroup) {
        q.codes = quant::unpackInt4(packed, order, isSigned, out).t().contiguous();
        q.params.scale = scale.t().contiguous();
        q.params.zeroPoint = quant::unpackInt4(zp, order, isSigned, out).t().contiguous();
    } else if (quant::isInt4(spec.dtype)) {
        q.codes = quant::unpackInt4(packed, order, isSigned, in);
        q.params.scale = scale;
        q.params.zeroPoint = zp.dim() == 0 ? zp : quant::unpackInt4(zp, order, isSigned, out);
    } else {
        q.codes = isInt ? packed.to(at::kInt) : packed;
        q.params.scale = scale;
        q.params.zeroPoint = isInt ? zp : at::zeros_like(scale, at::kInt);
    }
    q.params.zeroPoint = q.params.zeroPoint.to(at::kInt);
    return quant::dequantize(q, spec, outDtype);
}

} // namespace

QuarkFolderInfo inspectQuarkFolder(const std::string& directory) {
    QuarkFolderInfo info;
    const nlohmann::json config = readConfig(directory);
    const std::string configPath = directory + "/config.json";
    if (!isRealQuantized(config, configPath))
        return info;
    info.realQuantized = true;
    info.packMethod = packMethodOf(config, configPath);
    const Recipe recipe = recipeFromQuarkConfig(config, configPath);
    const auto checkpoint = Checkpoint::open(directory);
    for (const std::string& n : checkpoint->tensorNames()) {
        if (!endsWith(n, ".weight_scale"))
            continue;
        const std::string layer = n.substr(0, n.size() - 13);
        const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
        info.layers.emplace_back(layer, scheme ? scheme->label() : std::string("?"));
    }
    return info;
}

quant::StoredQuantization readStoredQuantization(const std::string& directory) {
    quant::StoredQuantization stored;
    if (!isRealQuantized(readConfig(directory), directory + "/config.json"))
        return stored;
    const auto c = Checkpoint::open(directory);
    // A scale read as stored: per tensor (0-dim or one element), in its stored float dtype.
    auto scaleOf = [&](const std::string& layer, const std::string& role) {
        const std::string name = layer + "." + role + "_scale";
        const at::Tensor s = read(*c, name);
        if (s.numel() != 1 || !s.is_floating_point())
            throw Error(c->fileOf(name).path(), name,
                        "expected one float scale (activations are quantized per tensor)");
        // A run divides activations by it: zero, negative or non-finite would turn them into
        // inf/NaN (or flip their signs) with no error at all.
        const double v = s.to(at::kDouble).item<double>();
        if (!(std::isfinite(v) && v > 0))
            throw Error(c->fileOf(name).path(), name,
                        "scale " + std::to_string(v) + " is not a positive finite number");
        quant::QuantParams p;
        p.scale = s.reshape({1});
        const std::string zpName = layer + "." + role + "_zero_point";
        if (c->contains(zpName)) {
            const at::Tensor zp = read(*c, zpName);
            if (zp.numel() != 1 || zp.is_floating_point())
                throw Error(c->fileOf(zpName).path(), zpName, "expected one integer zero point");
            p.zeroPoint = zp.reshape({1}).to(at::kInt);
        } else {
            p.zeroPoint = at::zeros({1}, at::kInt);
        }
        return p;
    };
    for (const std::string& n : c->tensorNames()) {
        for (const char* role : {"weight", "input", "output"}) {
            const std::string suffix = std::string(".") + role + "_scale";
            if (!endsWith(n, suffix))
                continue;
            const std::string layer = n.substr(0, n.size() - suffix.size());
            quant::StoredLayerQuantization& s = stored[layer];
            if (role == std::string("weight"))
                s.weight = true;
            else if (role == std::string("input"))
                s.input = scaleOf(layer, role);
            else
                s.output = scaleOf(layer, role);
        }
    }
    return stored;
}

namespace {

// One tensor of an expert's linear, in a model whose experts the source stores fused
// (FusedExperts.h): Quark's export names them per expert, <experts module>.<e>.<linear>.
struct ExpertTensor {
    std::string module; // e.g. model.layers.1.feed_forward.experts
    int64_t expert = 0;
};

std::optional<ExpertTensor> expertTensorOf(const MoeConfig& m, const std::string& name) {
    for (const std::string* linear : {&m.gateName, &m.upName, &m.downName})
        for (const char* suffix : {".weight", ".bias"}) {
            const std::string tail = "." + *linear + suffix;
            if (!endsWith(name, tail))
                continue;
            const std::string head = name.substr(0, name.size() - tail.size());
            const size_t dot = head.rfind('.');
            if (dot == std::string::npos)
                continue;
            const std::string index = head.substr(dot + 1);
            const std::string module = head.substr(0, dot);
            if (index.empty() || index.size() > 9 ||
                !std::all_of(
                    index.begin(), index.end(),
                    [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
                !endsWith(module, "." + m.expertsPath))
                continue;
            return ExpertTensor{module, std::stoll(index)};
        }
    return std::nullopt;
}

} // namespace

void writeDequantizedQuark(const std::string& directory, const std::string& outFile) {
    const nlohmann::json config = readConfig(directory);
    const std::string configPath = directory + "/config.json";
    if (!isRealQuantized(config, configPath))
        throw Error(configPath, "quantization_config",
                    "not a Quark export with real_quantized weights");
    const Recipe recipe = recipeFromQuarkConfig(config, configPath);
    const auto order = quant::packOrderFromName(packMethodOf(config, configPath));
    if (!order)
        throw Error(configPath, "quantization_config.export.pack_method", "unknown pack method");
    const auto c = Checkpoint::open(directory);
    const std::set<std::string> extras = {".weight_scale", ".weight_zero_point",
                                          ".input_scale",  ".input_zero_point",
                                          ".output_scale", ".output_zero_point"};
    // Layers with a stored weight scale are quantized; everything else is copied.
    std::set<std::string> quantized;
    for (const std::string& n : c->tensorNames())
        if (endsWith(n, ".weight_scale"))
            quantized.insert(n.substr(0, n.size() - 13));
    // Experts the model stores fused (Llama 4, gpt-oss, DBRX): the export writes each expert's
    // linears under its own name, as Quark does; they are dequantized and fused back into the
    // stored tensors, so that the family reads the layout its config describes.
    // (config.json is parsed for that only when the export has expert tensors at all.)
    const std::vector<std::string> stored = c->tensorNames();
    const bool anyExperts = std::any_of(stored.begin(), stored.end(), [](const std::string& n) {
        return n.find(".experts.") != std::string::npos;
    });
    const ModelConfig model =
        anyExperts ? parseModelConfig(config.dump(), configPath) : ModelConfig();
    const MoeConfig& moe = model.moe;
    const bool fusedExperts = moe.numExperts > 0 && moe.storage != ExpertStorage::PerExpert;
    std::set<std::string> fusedModules;
    // The whole layout is checked before the output file is created.
    std::vector<TensorInfo> layout;
    std::vector<std::string> names;
    std::vector<std::optional<quant::QuantScheme>> schemes; // per output tensor; none: copied
    std::map<std::string, std::string> fusedOwner;          // fused tensor -> its experts module
    for (const std::string& n : c->tensorNames()) {
        bool extra = false;
        for (const std::string& e : extras)
            extra = extra || endsWith(n, e);
        if (extra)
            continue;
        TensorInfo t = c->info(n);
        t.name = n;
        const std::optional<ExpertTensor> x = fusedExperts ? expertTensorOf(moe, n) : std::nullopt;
        if (x && quantized.count(n.substr(0, n.size() - 7))) {
            const std::string layer = n.substr(0, n.size() - 7);
            const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
            if (!scheme)
                throw Error(configPath, layer,
                            "has quantized tensors but quantization_config gives it no scheme");
            checkQuantizedLinear(*c, layer, *scheme, configPath);
            const DType scaleType = c->info(layer + ".weight_scale").dtype;
            t.dtype = scaleType == DType::BF16 || scaleType == DType::F16 ? scaleType : DType::F32;
        }
        if (x) {
            // the fused tensors take the place of the module's first expert tensor
            if (x->expert >= moe.numExperts)
                throw Error(c->fileOf(n).path(), n,
                            "expert " + std::to_string(x->expert) + " of " +
                                std::to_string(moe.numExperts) + " (num_local_experts)");
            if (fusedModules.insert(x->module).second)
                for (const std::string& rel : fusedExpertTensors(moe.storage, moe.expertBias)) {
                    TensorInfo f = t;
                    f.name = x->module + "." + rel;
                    f.shape = fusedExpertShape(moe.storage, rel, moe.numExperts,
                                               moe.expertIntermediate, model.hiddenSize);
                    layout.push_back(f);
                    names.push_back(f.name);
                    schemes.push_back(std::nullopt);
                    fusedOwner[f.name] = x->module;
                }
            continue;
        }
        const std::string layer = endsWith(n, ".weight") ? n.substr(0, n.size() - 7) : "";
        std::optional<quant::QuantScheme> scheme;
        if (!layer.empty() && quantized.count(layer)) {
            scheme = recipe.schemeFor(layer, layerKindOf(layer));
            if (!scheme)
                throw Error(configPath, layer,
                            "has quantized tensors but quantization_config gives it no scheme");
            const auto [out, in] = checkQuantizedLinear(*c, layer, *scheme, configPath);
            const DType scaleType = c->info(layer + ".weight_scale").dtype;
            t.dtype = scaleType == DType::BF16 || scaleType == DType::F16 ? scaleType : DType::F32;
            t.shape = {out, in};
        } else if (!layer.empty() && !isFloat(t.dtype) &&
                   recipe.schemeFor(layer, layerKindOf(layer))) {
            throw Error(c->fileOf(n).path(), n,
                        "stored as " + dtypeName(t.dtype) + " but there is no " + layer +
                            ".weight_scale to dequantize it with");
        }
        layout.push_back(t);
        names.push_back(n);
        schemes.push_back(std::move(scheme));
    }
    // One expert linear as the model computes with it: dequantized, or stored in float.
    auto expertLinear = [&](const std::string& layer, at::ScalarType dtype) {
        if (!c->find(layer + ".weight"))
            throw Error(c->directory(), layer + ".weight", "expert tensor missing from the export");
        if (!quantized.count(layer)) {
            if (!isFloat(c->info(layer + ".weight").dtype))
                throw Error(c->fileOf(layer + ".weight").path(), layer + ".weight",
                            "stored as " + dtypeName(c->info(layer + ".weight").dtype) +
                                " but there is no " + layer +
                                ".weight_scale to dequantize it with");
            return read(*c, layer + ".weight").to(dtype);
        }
        const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
        const auto [out, in] = checkQuantizedLinear(*c, layer, *scheme, configPath);
        return dequantizeLinear(*c, layer, scheme->weight, *order, out, in, dtype);
    };
    auto expertBias = [&](const std::string& layer, at::ScalarType dtype) {
        if (!moe.expertBias)
            return at::Tensor();
        if (!c->find(layer + ".bias"))
            throw Error(c->directory(), layer + ".bias", "expert bias missing from the export");
        return read(*c, layer + ".bias").to(dtype);
    };
    std::string fusedModule; // the module whose fused tensors are being written
    std::map<std::string, at::Tensor> fused;
    SafetensorsWriter writer(outFile, layout, {{"format", "pt"}, {"quantscope", "dequantized"}});
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        const TensorInfo& t = layout[i];
        const auto owner = fusedOwner.find(n);
        if (owner != fusedOwner.end()) {
            if (owner->second != fusedModule) {
                fusedModule = owner->second;
                const at::ScalarType dtype = storedFloatType(t.dtype);
                std::vector<ExpertSlices> experts;
                for (int64_t e = 0; e < moe.numExperts; ++e) {
                    const std::string x = fusedModule + "." + std::to_string(e) + ".";
                    ExpertSlices sl;
                    sl.gate = expertLinear(x + moe.gateName, dtype);
                    sl.up = expertLinear(x + moe.upName, dtype);
                    sl.down = expertLinear(x + moe.downName, dtype);
                    sl.gateBias = expertBias(x + moe.gateName, dtype);
                    sl.upBias = expertBias(x + moe.upName, dtype);
                    sl.downBias = expertBias(x + moe.downName, dtype);
                    experts.push_back(std::move(sl));
                }
                fused = fuseExperts(moe.storage, experts);
            }
            const at::Tensor w = fused.at(n.substr(fusedModule.size() + 1))
                                     .to(storedFloatType(t.dtype))
                                     .contiguous();
            if (w.sizes().vec() != t.shape)
                throw Error(c->directory(), n,
                            "the experts fuse to a shape config.json does not imply");
            writer.writeNext(w.data_ptr(), uint64_t(w.nbytes()));
            continue;
        }
        if (!schemes[i]) {
            writer.writeNext(c->fileOf(n).data(c->info(n)), c->info(n).byteSize());
            continue;
        }
        const at::Tensor w =
            dequantizeLinear(*c, n.substr(0, n.size() - 7), schemes[i]->weight, *order, t.shape[0],
                             t.shape[1], storedFloatType(t.dtype))
                .contiguous();
        writer.writeNext(w.data_ptr(), uint64_t(w.nbytes()));
    }
    writer.commit();
}

std::unique_ptr<Checkpoint> openCheckpointForCompute(const std::string& directory) {
    if (!isRealQuantized(readConfig(directory), directory + "/config.json"))
        return Checkpoint::open(directory);
    // Cache key: the reader's format, the export's absolute path, and size + mtime of its
    // files. Bump kDequantizedCacheFormat whenever the dequantized file a reader writes changes
    // (a cache written by an older, wrong reader must not be reused).
    constexpr int kDequantizedCacheFormat = 3;
    QCryptographicHash h(QCryptographicHash::Sha256);
    const QDir dir(QString::fromStdString(directory));
    h.addData(QByteArray::number(kDequantizedCacheFormat));
    h.addData(dir.absolutePath().toUtf8());
    for (const QFileInfo& f :
         dir.entryInfoList({"*.safetensors", "*.json"}, QDir::Files, QDir::Name))
        h.addData((f.fileName() + QString::number(f.size()) +
                   QString::number(f.lastModified().toMSecsSinceEpoch()))
                      .toUtf8());
    QString base = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
    if (base.isEmpty())
        base = QDir::tempPath();
    const QString cache = base + "/quantscope-dequantized/" + h.result().toHex().left(16);
    const QString file = cache + "/model.safetensors";
    if (!QFileInfo::exists(file)) {
        if (!QDir().mkpath(cache))
            throw Error(cache.toStdString(), "", "cannot create the dequantization cache folder");
        writeDequantizedQuark(directory, file.toStdString());
    }
    return Checkpoint::open(cache.toStdString());
}

} // namespace qs
