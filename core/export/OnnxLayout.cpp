// The ONNX exporter's layout table: the initializers of a quantized linear and of a static
// activation quantizer, and where initializers go (the graph or external data). The exporter
// writes by these functions; size accounting (ExportSize.h) reads them.
#include "export/OnnxExporter.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <QByteArray>

#include <algorithm>

namespace qs {

using onnx::ElemType;
using quant::Granularity;
using quant::isFp8;

onnx::ElemType OnnxExporter::elemType(quant::DataType t) {
    switch (t) {
    case quant::DataType::Int4:
        return onnx::ElemType::Int4;
    case quant::DataType::Uint4:
        return onnx::ElemType::Uint4;
    case quant::DataType::Int8:
        return onnx::ElemType::Int8;
    case quant::DataType::Uint8:
        return onnx::ElemType::Uint8;
    case quant::DataType::Fp8E4M3:
        return onnx::ElemType::Float8E4M3FN; // Quark's e4m3 is the "fn" variant: max 448, no inf
    case quant::DataType::Fp8E5M2:
        return onnx::ElemType::Float8E5M2;
    default:
        throw Error("onnx", quant::dataTypeName(t), "has no ONNX quantized type");
    }
}

uint64_t OnnxTensor::bytes() const {
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    return onnx::rawBytes(type, n);
}

std::vector<OnnxTensor> OnnxExporter::weightLayout(const std::string& n,
                                                   const quant::QuantScheme& scheme,
                                                   const std::vector<int64_t>& shape) {
    const quant::QuantSpec& spec = scheme.weight;
    const int64_t out = shape.at(0), in = shape.at(1);
    const ElemType type = elemType(spec.dtype);
    std::vector<int64_t> scaleDims;                  // per tensor: a scalar
    if (spec.granularity == Granularity::PerChannel) // along axis 1 (out) or 0 (in) of [in, out]
        scaleDims = {spec.chAxis == 0 ? out : in};
    else if (spec.granularity == Granularity::PerGroup) // blocks along axis 0 of [in, out]
        scaleDims = {(in + spec.groupSize - 1) / spec.groupSize, out};
    std::vector<OnnxTensor> t = {
        {n + ".weight_quantized", type, {in, out}, StoredRole::Codes},
        {n + ".weight_scale", ElemType::Float, scaleDims, StoredRole::Scale}};
    if (!isFp8(spec.dtype))
        t.push_back({n + ".weight_zero_point", type, scaleDims, StoredRole::ZeroPoint});
    return t;
}

std::vector<OnnxTensor> OnnxExporter::activationLayout(const std::string& prefix,
                                                       const quant::QuantSpec& spec) {
    return {{prefix + "_scale", ElemType::Float, {}, StoredRole::ActivationScale},
            {prefix + "_zero_point", elemType(spec.dtype), {}, StoredRole::ActivationScale}};
}

bool OnnxExporter::usesExternalData(const Checkpoint& source) {
    uint64_t floatBytes = 0;
    for (const std::string& n : source.tensorNames()) {
        uint64_t numel = 1;
        for (int64_t d : source.info(n).shape)
            numel *= uint64_t(d);
        floatBytes += numel * 4;
    }
    const QByteArray force = qgetenv("QS_ONNX_EXTERNAL_DATA");
    return force.isEmpty() ? floatBytes > kExternalDataAbove : force != "0";
}

int64_t OnnxExporter::tableRows(const ModelConfig& config) {
    return std::min(config.maxPositions, kMaxTablePositions);
}

} // namespace qs
