#include "quant/QuantSpec.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <set>

namespace qs::quant {

using nlohmann::json;

namespace {

std::string joinNames(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

std::string allowedGranularities(const TypeTraits& t) {
    std::vector<std::string> names;
    for (int g = 0; g < 4; ++g)
        if (t.granularities & (1u << g))
            names.push_back(granularityName(static_cast<Granularity>(g)));
    return joinNames(names);
}

std::string allowedScaleTypes(const TypeTraits& t) {
    std::vector<std::string> names;
    for (int s = 0; s < 5; ++s)
        if (t.scaleTypes & (1u << s))
            names.push_back(scaleTypeName(static_cast<ScaleType>(s)));
    return joinNames(names);
}

// Quark observer class written to "observer_cls" for a spec.
const char* quarkObserverClass(const QuantSpec& s) {
    const TypeTraits& t = traits(s.dtype);
    switch (t.kernel) {
    case Kernel::Cast:
        return "PlaceholderObserver";
    case Kernel::MxBlock:
        return s.dtype == DataType::MxInt8 ? nullptr : "PerBlockMXObserver";
    case Kernel::NvFp4:
        return "PerBlockMXObserver";
    case Kernel::Mx6:
    case Kernel::Bfp16:
        return nullptr;
    default:
        break;
    }
    switch (s.granularity) {
    case Granularity::PerTensor:
        if (s.scaleType == ScaleType::Pow2)
            return "PerTensorPowOf2MinMaxObserver";
        if (s.observer == ObserverKind::Percentile)
            return "PerTensorPercentileObserver";
        if (s.observer == ObserverKind::Mse)
            return "PerTensorMSEObserver";
        return "PerTensorMinMaxObserver";
    case Granularity::PerChannel:
    case Granularity::PerToken:
        return s.scaleType == ScaleType::Pow2 ? "PerChannelPowOf2MinMaxObserver"
                                              : "PerChannelMinMaxObserver";
    case Granularity::PerGroup:
        return t.encoding == Encoding::Float ? "PerBlockMXObserver" : "PerGroupMinMaxObserver";
    }
    return nullptr;
}

json nullOr(bool present, const json& value) {
    return present ? value : json(nullptr);
}

const char* quarkScaleTypeName(ScaleType s) {
    switch (s) {
    case ScaleType::Float32:
        return "float32";
    case ScaleType::Pow2:
        return "pof2";
    default:
        return "float";
    }
}

} // namespace

QuantSpec QuantSpec::defaults(DataType dtype) {
    const TypeTraits& t = traits(dtype);
    QuantSpec s;
    s.dtype = dtype;
    switch (t.encoding) {
    case Encoding::Int:
    case Encoding::PassThrough:
        break;
    case Encoding::Float:
        if (dtype != DataType::Fp8E4M3 && dtype != DataType::Fp8E5M2) {
            s.granularity = Granularity::PerGroup;
            s.chAxis = -1;
            s.groupSize = 32;
        }
        break;
    case Encoding::Mx:
    case Encoding::NvFp4:
    case Encoding::BlockFloat:
        s.granularity = Granularity::PerGroup;
        s.chAxis = -1;
        s.groupSize = t.blockSize;
        s.scaleType = t.encoding == Encoding::Mx      ? ScaleType::E8M0
                      : t.encoding == Encoding::NvFp4 ? ScaleType::E4M3
                                                      : ScaleType::Pow2;
        break;
    }
    return s;
}

void QuantSpec::validate(const std::string& source) const {
    const TypeTraits& t = traits(dtype);
    if (!(t.granularities & bit(granularity)))
        throw Error(source, "qscheme",
                    dataTypeName(dtype) + " does not support " + granularityName(granularity) +
                        " (allowed: " + allowedGranularities(t) + ")");
    if (granularity == Granularity::PerGroup) {
        if (groupSize <= 0)
            throw Error(source, "group_size",
                        "per_group needs a positive group size, got " + std::to_string(groupSize));
        if (t.blockSize > 0 && groupSize != t.blockSize)
            throw Error(source, "group_size",
                        dataTypeName(dtype) + " has a fixed block size of " +
                            std::to_string(t.blockSize) + ", got " + std::to_string(groupSize));
    } else if (groupSize != 0) {
        throw Error(source, "group_size",
                    "only per_group uses a group size, got " + std::to_string(groupSize) +
                        " with " + granularityName(granularity));
    }
    if ((granularity == Granularity::PerChannel || granularity == Granularity::PerGroup) &&
        (chAxis < -8 || chAxis > 7))
        throw Error(source, "ch_axis", "axis " + std::to_string(chAxis) + " is out of range");
    if (!symmetric && !t.allowsAsymmetric)
        throw Error(source, "symmetric", dataTypeName(dtype) + " is symmetric only");
    if (!(t.scaleTypes & bit(scaleType)))
        throw Error(source, "scale_type",
                    dataTypeName(dtype) + " does not support scale type " +
                        scaleTypeName(scaleType) + " (allowed: " + allowedScaleTypes(t) + ")");
    if (scaleType == ScaleType::Pow2 && t.encoding == Encoding::Int &&
        granularity != Granularity::PerTensor && granularity != Granularity::PerChannel)
        throw Error(source, "scale_type",
                    "pow2 scales exist for per_tensor and per_channel only (Quark's PowOf2 "
                    "observers)");
    if (scaleType == ScaleType::E8M0 && t.encoding == Encoding::Float &&
        granularity != Granularity::PerGroup)
        throw Error(source, "scale_type", "e8m0 scales need per_group granularity");
    if (granularity == Granularity::PerToken && !isDynamic)
        throw Error(source, "is_dynamic", "per_token quantization is always dynamic");
    if (observer != ObserverKind::MinMax) {
        if (granularity != Granularity::PerTensor)
            throw Error(source, "observer_cls",
                        observerName(observer) + " observers are per_tensor only (as in Quark)");
        if (t.encoding != Encoding::Int && !isFp8(dtype))
            throw Error(source, "observer_cls",
                        observerName(observer) + " observers support integer and FP8 types only");
        if (scaleType == ScaleType::Pow2)
            throw Error(source, "observer_cls",
                        "pow2 scales use their own min/max search; use the minmax observer");
    }
}

json QuantSpec::toJson() const {
    validate();
    const TypeTraits& t = traits(dtype);
    json j;
    j["dtype"] = t.quarkDtype;
    j["is_dynamic"] = isDynamic;
    j["is_scale_quant"] = false;
    j["mx_element_dtype"] = nullptr;
    j["scale_format"] = nullptr;
    j["scale_calculation_mode"] = nullptr;
    const char* observerCls = quarkObserverClass(*this);
    j["observer_cls"] = observerCls ? json(observerCls) : json(nullptr);

    switch (t.encoding) {
    case Encoding::PassThrough:
        for (const char* key :
             {"qscheme", "ch_axis", "group_size", "symmetric", "round_method", "scale_type"})
            j[key] = nullptr;
        return j;
    case Encoding::BlockFloat:
        for (const char* key : {"qscheme", "symmetric", "round_method", "scale_type"})
            j[key] = nullptr;
        j["ch_axis"] = chAxis;
        j["group_size"] = groupSize;
        j["scale_calculation_mode"] = "even";
        return j;
    case Encoding::Mx:
        j["ch_axis"] = chAxis;
        j["group_size"] = groupSize;
        j["scale_calculation_mode"] = "even";
        if (dtype == DataType::MxInt8) {
            // Quark's OCP_MXINT8Spec: the legacy "mx" dtype with an int8 element.
            j["mx_element_dtype"] = "int8";
            for (const char* key : {"qscheme", "symmetric", "round_method", "scale_type"})
                j[key] = nullptr;
            return j;
        }
        j["qscheme"] = "per_group";
        j["symmetric"] = nullptr;
        j["round_method"] = "half_even";
        j["scale_type"] = "float";
        j["scale_format"] = "e8m0";
        return j;
    case Encoding::NvFp4: {
        // Quark's FP4Block16ScaleE4M3Scheme: FP4 per group (fp32 scale), then the group scales
        // quantized to FP8 E4M3 per tensor (static, min/max).
        json first = j;
        first["qscheme"] = "per_group";
        first["ch_axis"] = chAxis;
        first["group_size"] = groupSize;
        first["symmetric"] = nullptr;
        first["round_method"] = "half_even";
        first["scale_type"] = "float32";
        first["scale_format"] = "float32";
        json second;
        second["dtype"] = "fp8_e4m3";
        second["is_dynamic"] = false;
        second["qscheme"] = "per_tensor";
        second["ch_axis"] = nullptr;
        second["group_size"] = nullptr;
        second["symmetric"] = true;
        second["round_method"] = "half_even";
        second["scale_type"] = "float32";
        second["scale_format"] = nullptr;
        second["scale_calculation_mode"] = nullptr;
        second["mx_element_dtype"] = nullptr;
        second["observer_cls"] = "PerTensorMinMaxObserver";
        second["is_scale_quant"] = true;
        return json::array({first, second});
    }
    case Encoding::Int:
    case Encoding::Float:
        break;
    }
    const bool perToken = granularity == Granularity::PerToken;
    j["qscheme"] = perToken ? "per_channel" : granularityName(granularity);
    // Quark quantizes activations per token as dynamic per-channel on axis 1 of [batch, seq, h].
    const bool usesAxis =
        granularity == Granularity::PerChannel || granularity == Granularity::PerGroup || perToken;
    j["ch_axis"] = nullOr(usesAxis, perToken ? 1 : chAxis);
    j["group_size"] = nullOr(granularity == Granularity::PerGroup, groupSize);
    j["symmetric"] = symmetric;
    j["round_method"] = roundMethodName(roundMethod);
    if (t.encoding == Encoding::Float && granularity == Granularity::PerGroup) {
        j["symmetric"] = nullptr;
        j["scale_type"] =
            quarkScaleTypeName(scaleType == ScaleType::E8M0 ? ScaleType::Float : scaleType);
        j["scale_format"] = scaleType == ScaleType::E8M0 ? "e8m0" : "float32";
        if (scaleType == ScaleType::E8M0)
            j["scale_calculation_mode"] = "even";
    } else {
        j["scale_type"] = quarkScaleTypeName(scaleType);
    }
    return j;
}

namespace {

// Small strict readers: each names the key it reads in the error.
struct Reader {
    const json& j;
    const std::string& source;

    bool has(const char* key) const { return j.contains(key) && !j.at(key).is_null(); }
    std::string str(const char* key) const {
        const json& v = j.at(key);
        if (!v.is_string())
            throw Error(source, key, "expected a string, got " + std::string(v.type_name()));
        return v.get<std::string>();
    }
    int integer(const char* key) const {
        const json& v = j.at(key);
        if (!v.is_number_integer())
            throw Error(source, key, "expected an integer, got " + std::string(v.type_name()));
        const auto x = v.get<long long>();
        if (x < -(1LL << 30) || x > (1LL << 30))
            throw Error(source, key, "value out of range");
        return static_cast<int>(x);
    }
    bool boolean(const char* key) const {
        const json& v = j.at(key);
        if (!v.is_boolean())
            throw Error(source, key, "expected true/false, got " + std::string(v.type_name()));
        return v.get<bool>();
    }
};

const std::set<std::string>& knownKeys() {
    static const std::set<std::string> keys{"dtype",
                                            "is_dynamic",
                                            "qscheme",
                                            "ch_axis",
                                            "group_size",
                                            "block_size",
                                            "symmetric",
                                            "round_method",
                                            "scale_type",
                                            "scale_format",
                                            "scale_calculation_mode",
                                            "mx_element_dtype",
                                            "observer_cls",
                                            "is_scale_quant",
                                            "enable_buffer_reuse",
                                            "max_input_numel",
                                            "zero_point_type",
                                            "qat_spec"};
    return keys;
}

std::optional<DataType> dtypeFromQuark(const std::string& name) {
    if (name == "fp8_e4m3")
        return DataType::Fp8E4M3;
    return dataTypeFromName(name);
}

std::optional<DataType> mxFor(DataType element) {
    switch (element) {
    case DataType::Fp4:
        return DataType::MxFp4;
    case DataType::Fp6E3M2:
        return DataType::MxFp6E3M2;
    case DataType::Fp6E2M3:
        return DataType::MxFp6E2M3;
    case DataType::Fp8E4M3:
        return DataType::MxFp8E4M3;
    case DataType::Fp8E5M2:
        return DataType::MxFp8E5M2;
    case DataType::Int8:
        return DataType::MxInt8;
    default:
        return std::nullopt;
    }
}

bool isNvFp4Pair(const json& a) {
    if (!a.is_array() || a.size() != 2 || !a[0].is_object() || !a[1].is_object())
        return false;
    const json& first = a[0];
    const json& second = a[1];
    return first.value("dtype", json()).is_string() && first["dtype"] == "fp4" &&
           first.value("group_size", json()) == json(16) &&
           second.value("dtype", json()) == json("fp8_e4m3") &&
           second.value("is_scale_quant", json(false)) == json(true);
}

} // namespace

QuantSpec QuantSpec::fromJson(const json& jin, TensorRole role, const std::string& source) {
    if (isNvFp4Pair(jin)) {
        QuantSpec first = fromJson(jin[0], role, source); // validates the FP4 stage
        QuantSpec s = defaults(DataType::NvFp4);
        s.chAxis = first.chAxis;
        s.isDynamic = first.isDynamic;
        s.validate(source);
        return s;
    }
    if (jin.is_array())
        throw Error(
            source, "dtype",
            "a multi-stage spec other than NVFP4 (FP4 + FP8 scale) cannot be one QuantSpec");
    if (!jin.is_object())
        throw Error(source, "", "a tensor spec must be a JSON object");
    for (const auto& item : jin.items())
        if (!knownKeys().count(item.key()))
            throw Error(source, item.key(), "unknown key");
    const Reader r{jin, source};
    if (!r.has("dtype"))
        throw Error(source, "dtype", "missing");
    const std::string dtypeName = r.str("dtype");
    if (r.has("is_scale_quant") && r.boolean("is_scale_quant"))
        throw Error(source, "is_scale_quant", "a scale-quantization stage cannot stand alone");
    if (r.has("block_size"))
        throw Error(source, "block_size", "2-D per_block quantization is not supported");

    QuantSpec s;
    std::optional<DataType> dtype;
    if (dtypeName == "mx") {
        if (!r.has("mx_element_dtype"))
            throw Error(source, "mx_element_dtype", "required with dtype 'mx'");
        const std::string element = r.str("mx_element_dtype");
        const auto elementType = dtypeFromQuark(element);
        dtype = elementType ? mxFor(*elementType) : std::nullopt;
        if (!dtype)
            throw Error(source, "mx_element_dtype", "unsupported MX element '" + element + "'");
    } else {
        dtype = dtypeFromQuark(dtypeName);
        if (!dtype)
            throw Error(source, "dtype",
                        "unknown data type '" + dtypeName +
                            "' (known: " + joinNames(dataTypeNames()) + ", mx)");
        if (r.has("mx_element_dtype"))
            throw Error(source, "mx_element_dtype", "only valid with dtype 'mx'");
    }
    s = defaults(*dtype);

    if (r.has("round_method")) {
        const std::string rm = r.str("round_method");
        const auto parsed = roundMethodFromName(rm);
        if (!parsed)
            throw Error(source, "round_method", "'" + rm + "' is not supported (only half_even)");
        s.roundMethod = *parsed;
    }
    if (r.has("scale_calculation_mode") && r.str("scale_calculation_mode") != "even")
        throw Error(source, "scale_calculation_mode",
                    "only the 'even' MX shared-exponent rounding is supported");
    if (r.has("is_dynamic"))
        s.isDynamic = r.boolean("is_dynamic");

    const TypeTraits& t = traits(s.dtype);
    if (t.encoding == Encoding::PassThrough)
        return s; // Quark ignores every other field for bfloat16/float16 (PlaceholderObserver)

    if (t.encoding == Encoding::Mx || t.encoding == Encoding::BlockFloat) {
        if (r.has("ch_axis"))
            s.chAxis = r.integer("ch_axis");
        if (r.has("group_size"))
            s.groupSize = r.integer("group_size");
        if (r.has("scale_format") && r.str("scale_format") != "e8m0")
            throw Error(source, "scale_format", "MX types use e8m0 scales");
        s.validate(source);
        return s;
    }

    // Integer and minifloat types.
    if (!r.has("qscheme"))
        throw Error(source, "qscheme", "missing for " + dtypeName);
    const std::string qscheme = r.str("qscheme");
    const auto granularity = granularityFromName(qscheme);
    if (!granularity)
        throw Error(source, "qscheme",
                    "unknown '" + qscheme + "' (known: " + joinNames(granularityNames()) + ")");
    s.granularity = *granularity;
    // Quark ignores ch_axis for per_tensor and per_token; keeping a stray value would make two
    // equal schemes compare unequal (and not survive the recipe round trip, which writes none).
    const bool usesAxis =
        s.granularity == Granularity::PerChannel || s.granularity == Granularity::PerGroup;
    s.chAxis = usesAxis && r.has("ch_axis") ? r.integer("ch_axis") : 0;
    s.groupSize = r.has("group_size") ? r.integer("group_size") : 0;
    if (s.granularity != Granularity::PerGroup && s.groupSize != 0)
        throw Error(source, "group_size", "only per_group uses a group size");
    s.symmetric = r.has("symmetric") ? r.boolean("symmetric") : true;
    s.scaleType = ScaleType::Float;
    if (r.has("scale_type")) {
        const std::string st = r.str("scale_type");
        const auto parsed = scaleTypeFromName(st);
        if (!parsed || *parsed == ScaleType::E4M3)
            throw Error(source, "scale_type", "unsupported scale type '" + st + "'");
        s.scaleType = *parsed;
    }
    if (r.has("scale_format")) {
        const std::string sf = r.str("scale_format");
        if (sf == "e8m0") {
            if (s.granularity == Granularity::PerGroup && s.groupSize == 32) {
                const auto mx = mxFor(s.dtype);
                if (!mx)
                    throw Error(source, "scale_format", "no MX type for " + dtypeName);
                const QuantSpec base = s;
                s = defaults(*mx);
                s.chAxis = base.chAxis;
                s.isDynamic = base.isDynamic;
                s.validate(source);
                return s;
            }
            s.scaleType = ScaleType::E8M0;
        } else if (sf != "float32") {
            throw Error(source, "scale_format", "unsupported scale format '" + sf + "'");
        }
    }
    if (t.encoding == Encoding::Float && !r.has("symmetric"))
        s.symmetric = true; // Quark writes symmetric: null for block float specs
    if (r.has("observer_cls")) {
        const std::string cls = r.str("observer_cls");
        if (cls == "PerTensorPercentileObserver")
            s.observer = ObserverKind::Percentile;
        else if (cls == "PerTensorMSEObserver")
            s.observer = ObserverKind::Mse;
        else if (cls == "PerTensorPowOf2MinMaxObserver" || cls == "PerChannelPowOf2MinMaxObserver")
            s.scaleType = ScaleType::Pow2;
        else if (cls != "PerTensorMinMaxObserver" && cls != "PerChannelMinMaxObserver" &&
                 cls != "PerGroupMinMaxObserver" && cls != "PerBlockMXObserver" &&
                 cls != "PlaceholderObserver")
            throw Error(source, "observer_cls", "unsupported observer '" + cls + "'");
    }
    if (s.granularity == Granularity::PerChannel && role != TensorRole::Weight && s.isDynamic &&
        s.chAxis == 1) {
        s.granularity = Granularity::PerToken;
        s.chAxis = 0;
    }
    s.validate(source);
    return s;
}

std::string QuantSpec::summary() const {
    std::string out = dataTypeName(dtype) + " " + granularityName(granularity);
    if (granularity == Granularity::PerGroup)
        out += "(" + std::to_string(groupSize) + ", axis " + std::to_string(chAxis) + ")";
    else if (granularity == Granularity::PerChannel)
        out += "(axis " + std::to_string(chAxis) + ")";
    if (traits(dtype).allowsAsymmetric)
        out += symmetric ? " sym" : " asym";
    if (scaleType != ScaleType::Float)
        out += " scale " + scaleTypeName(scaleType);
    if (observer != ObserverKind::MinMax)
        out += " " + observerName(observer);
    out += isDynamic ? " dynamic" : " static";
    return out;
}

bool QuantSpec::operator==(const QuantSpec& o) const {
    return dtype == o.dtype && granularity == o.granularity && chAxis == o.chAxis &&
           groupSize == o.groupSize && symmetric == o.symmetric && scaleType == o.scaleType &&
           roundMethod == o.roundMethod && isDynamic == o.isDynamic && observer == o.observer;
}

} // namespace qs::quant
