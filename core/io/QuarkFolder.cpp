#include "io/QuarkFolder.h"
#include "io/TensorDType.h"

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

#include <fstream>
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
    std::ifstream in(path);
    if (!in)
        return {};
    try {
        return nlohmann::json::parse(in);
    } catch (const std::exception& e) {
        throw Error(path, "", std::string("not valid JSON: ") + e.what());
    }
}

bool isRealQuantized(const nlohmann::json& config) {
    if (!config.is_object() || !config.contains("quantization_config"))
        return false;
    const nlohmann::json& qc = config["quantization_config"];
    if (!qc.is_object() || qc.value("quant_method", "") != "quark")
        return false;
    const nlohmann::json exp = qc.value("export", nlohmann::json::object());
    return exp.is_object() && exp.value("weight_format", "real_quantized") == "real_quantized";
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

void expectShape(const at::Tensor& t, const std::vector<int64_t>& shape, const std::string& file,
                 const std::string& name) {
    if (t.sizes().vec() != shape) {
        std::string s;
        for (int64_t d : shape)
            s += (s.empty() ? "" : ", ") + std::to_string(d);
        throw Error(file, name, "shape does not match the layer's scheme (expected [" + s + "])");
    }
}

// The float weight [out, in] of one quantized linear.
at::Tensor dequantizeLinear(const Checkpoint& c, const std::string& layer,
                            const quant::QuantSpec& spec, quant::PackOrder order, int64_t out,
                            int64_t in, at::ScalarType outDtype) {
    const std::string w = layer + ".weight";
    const std::string file = c.fileOf(w).path();
    quant::QuantizedTensor q;
    q.dtype = spec.dtype;
    at::Tensor packed = read(c, w);
    at::Tensor scale = read(c, layer + ".weight_scale");
    if (isMxFloat(spec.dtype)) {
        // uint8 [out, in/2] (FP4) or [out, in/4*3] (FP6) codes, uint8 E8M0 [out, ceil(in/32)].
        const bool fp4 = spec.dtype == DataType::MxFp4;
        expectShape(packed, {out, fp4 ? in / 2 : in / 4 * 3}, file, w);
        expectShape(scale, {out, (in + 31) / 32}, file, layer + ".weight_scale");
        if (packed.scalar_type() != at::kByte || scale.scalar_type() != at::kByte)
            throw Error(file, layer,
                        quant::dataTypeName(spec.dtype) + " weight and weight_scale must be U8");
        q.codes = quant::unpackCodes(packed, spec.dtype, in);
        q.params.scale = quant::scaleFromE8m0(scale);
        q.params.zeroPoint = at::zeros(scale.sizes(), at::kInt);
        return quant::dequantize(q, spec, outDtype);
    }
    at::Tensor zp;
    const bool isInt = quant::isInteger(spec.dtype);
    if (isInt)
        zp = read(c, layer + ".weight_zero_point");
    const bool int4 = spec.dtype == DataType::Int4 || spec.dtype == DataType::Uint4;
    const bool isSigned = spec.dtype == DataType::Int4 || spec.dtype == DataType::Int8;
    const bool perGroup = spec.granularity == Granularity::PerGroup;
    const int64_t groups = perGroup ? in / spec.groupSize : 0;
    if (int4 && perGroup) {
        expectShape(packed, {in, (out + 7) / 8}, file, w);
        expectShape(scale, {groups, out}, file, layer + ".weight_scale");
        expectShape(zp, {groups, (out + 7) / 8}, file, layer + ".weight_zero_point");
        q.codes = quant::unpackInt4(packed, order, isSigned, out).t().contiguous();
        q.params.scale = scale.t().contiguous();
        q.params.zeroPoint = quant::unpackInt4(zp, order, isSigned, out).t().contiguous();
    } else if (int4) {
        expectShape(packed, {out, (in + 7) / 8}, file, w);
        const bool perTensor = spec.granularity == Granularity::PerTensor;
        expectShape(scale, perTensor ? std::vector<int64_t>{} : std::vector<int64_t>{out}, file,
                    layer + ".weight_scale");
        expectShape(zp, perTensor ? std::vector<int64_t>{} : std::vector<int64_t>{(out + 7) / 8},
                    file, layer + ".weight_zero_point");
        q.codes = quant::unpackInt4(packed, order, isSigned, in);
        q.params.scale = scale;
        q.params.zeroPoint = zp.dim() == 0 ? zp : quant::unpackInt4(zp, order, isSigned, out);
    } else {
        expectShape(packed, {out, in}, file, w);
        q.codes = isInt ? packed.to(at::kInt) : packed;
        q.params.scale = scale;
        q.params.zeroPoint = isInt ? zp.to(at::kInt) : at::zeros_like(scale, at::kInt);
    }
    const std::vector<int64_t> paramShape =
        spec.granularity == Granularity::PerTensor    ? std::vector<int64_t>{}
        : spec.granularity == Granularity::PerChannel ? std::vector<int64_t>{out}
                                                      : std::vector<int64_t>{out, groups};
    if (q.params.scale.sizes().vec() != paramShape)
        expectShape(q.params.scale, paramShape, file, layer + ".weight_scale");
    if (q.params.zeroPoint.sizes().vec() != paramShape)
        expectShape(q.params.zeroPoint, paramShape, file, layer + ".weight_zero_point");
    q.params.zeroPoint = q.params.zeroPoint.to(at::kInt);
    return quant::dequantize(q, spec, outDtype);
}

DType dtypeOf(at::ScalarType t) {
    return t == at::kBFloat16 ? DType::BF16 : t == at::kHalf ? DType::F16 : DType::F32;
}

} // namespace

QuarkFolderInfo inspectQuarkFolder(const std::string& directory) {
    QuarkFolderInfo info;
    const nlohmann::json config = readConfig(directory);
    if (!isRealQuantized(config))
        return info;
    info.realQuantized = true;
    info.packMethod = config["quantization_config"]
                          .value("export", nlohmann::json::object())
                          .value("pack_method", "reorder");
    const Recipe recipe = recipeFromQuarkConfig(config, directory + "/config.json");
    const auto checkpoint = Checkpoint::open(directory);
    for (const std::string& n : checkpoint->tensorNames()) {
        const std::string suffix = ".weight_scale";
        if (n.size() <= suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix))
            continue;
        const std::string layer = n.substr(0, n.size() - suffix.size());
        const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
        info.layers.push_back(layer + ": " + (scheme ? scheme->label() : std::string("?")));
    }
    return info;
}

quant::StoredQuantization readStoredQuantization(const std::string& directory) {
    quant::StoredQuantization stored;
    if (!isRealQuantized(readConfig(directory)))
        return stored;
    const auto c = Checkpoint::open(directory);
    auto endsWith = [](const std::string& s, const std::string& suffix) {
        return s.size() > suffix.size() &&
               s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    // A scale read as stored: per tensor (0-dim or one element), in its stored float dtype.
    auto scaleOf = [&](const std::string& layer, const std::string& role) {
        const std::string name = layer + "." + role + "_scale";
        const at::Tensor s = read(*c, name);
        if (s.numel() != 1 || !s.is_floating_point())
            throw Error(c->fileOf(name).path(), name,
                        "expected one float scale (activations are quantized per tensor)");
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

void writeDequantizedQuark(const std::string& directory, const std::string& outFile) {
    const nlohmann::json config = readConfig(directory);
    const std::string configPath = directory + "/config.json";
    const Recipe recipe = recipeFromQuarkConfig(config, configPath);
    const auto order = quant::packOrderFromName(config["quantization_config"]
                                                    .value("export", nlohmann::json::object())
                                                    .value("pack_method", "reorder"));
    if (!order)
        throw Error(configPath, "quantization_config.export.pack_method", "unknown pack method");
    const auto c = Checkpoint::open(directory);
    const std::set<std::string> extras = {".weight_scale", ".weight_zero_point",
                                          ".input_scale",  ".input_zero_point",
                                          ".output_scale", ".output_zero_point"};
    auto endsWith = [](const std::string& s, const std::string& suffix) {
        return s.size() > suffix.size() &&
               s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    // Layers with a stored weight scale are quantized; everything else is copied.
    std::set<std::string> quantized;
    for (const std::string& n : c->tensorNames())
        if (endsWith(n, ".weight_scale"))
            quantized.insert(n.substr(0, n.size() - 13));
    std::vector<TensorInfo> layout;
    std::vector<std::string> names;
    for (const std::string& n : c->tensorNames()) {
        bool extra = false;
        for (const std::string& e : extras)
            extra = extra || endsWith(n, e);
        if (extra)
            continue;
        TensorInfo t = c->info(n);
        t.name = n;
        if (endsWith(n, ".weight") && quantized.count(n.substr(0, n.size() - 7))) {
            const std::string layer = n.substr(0, n.size() - 7);
            const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
            if (!scheme)
                throw Error(configPath, layer,
                            "has quantized tensors but quantization_config gives it no scheme");
            const TensorInfo& s = c->info(layer + ".weight_scale");
            // [out, in] from the stored layout (int4 per group is stored transposed).
            const bool int4 =
                scheme->weight.dtype == DataType::Int4 || scheme->weight.dtype == DataType::Uint4;
            int64_t out = 0, in = 0;
            if (t.shape.size() != 2)
                throw Error(c->fileOf(n).path(), n, "quantized weight is not 2-D");
            if (isMxFloat(scheme->weight.dtype)) {
                // FP4: two codes per byte; FP6: four codes per three bytes.
                out = t.shape[0];
                in = scheme->weight.dtype == DataType::MxFp4 ? t.shape[1] * 2 : t.shape[1] / 3 * 4;
            } else if (int4 && scheme->weight.granularity == Granularity::PerGroup) {
                in = t.shape[0];
                out = s.shape.size() == 2 ? s.shape[1] : 0;
            } else if (int4) {
                out = t.shape[0];
                in = t.shape[1] * 8; // padding checked against the config's in_features by
                                     // the model's shape validation
            } else {
                out = t.shape[0];
                in = t.shape[1];
            }
            t.dtype = dtypeOf(at::kFloat);
            if (s.dtype == DType::BF16 || s.dtype == DType::F16)
                t.dtype = s.dtype;
            t.shape = {out, in};
        }
        layout.push_back(t);
        names.push_back(n);
    }
    SafetensorsWriter writer(outFile, layout, {{"format", "pt"}, {"quantscope", "dequantized"}});
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        const TensorInfo& t = layout[i];
        if (t.dtype == c->info(n).dtype && t.shape == c->info(n).shape) {
            writer.writeNext(c->fileOf(n).data(c->info(n)), c->info(n).byteSize());
            continue;
        }
        const std::string layer = n.substr(0, n.size() - 7);
        const auto scheme = recipe.schemeFor(layer, layerKindOf(layer));
        const at::ScalarType dt = storedFloatType(t.dtype);
        const at::Tensor w =
            dequantizeLinear(*c, layer, scheme->weight, *order, t.shape[0], t.shape[1], dt)
                .contiguous();
        writer.writeNext(w.data_ptr(), uint64_t(w.nbytes()));
    }
    writer.commit();
}

std::unique_ptr<Checkpoint> openCheckpointForCompute(const std::string& directory) {
    if (!isRealQuantized(readConfig(directory)))
        return Checkpoint::open(directory);
    // Cache key: the export's absolute path, and size + mtime of its files.
    QCryptographicHash h(QCryptographicHash::Sha256);
    const QDir dir(QString::fromStdString(directory));
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
