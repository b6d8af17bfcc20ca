#include "recipe/SchemeJson.h"

#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "util/Error.h"

namespace qs {

using nlohmann::json;

std::string joinNames(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

void rethrowAtField(const std::string& source, const std::string& field,
                    const std::function<void()>& body) {
    try {
        body();
    } catch (const Error& e) {
        std::string path = e.source().compare(0, field.size(), field) == 0 ? e.source() : field;
        if (!e.field().empty())
            path += (path.empty() ? "" : ".") + e.field();
        throw Error(source, path, e.reason());
    } catch (const json::exception& e) {
        throw Error(source, field, e.what());
    }
}

json schemeToRecipeJson(const quant::QuantScheme& scheme) {
    if (!scheme.name.empty()) {
        try {
            if (quant::resolveScheme(scheme.name) == scheme)
                return scheme.name;
        } catch (const Error&) {
            // a name that no longer resolves: fall back to the full form below
        }
    }
    return scheme.toQuarkLayerConfig();
}

quant::QuantScheme schemeFromRecipeJson(const json& value, const std::string& source,
                                        const std::string& field) {
    if (value.is_string()) {
        try {
            return quant::resolveScheme(value.get<std::string>());
        } catch (const Error& e) {
            throw Error(source, field, e.reason());
        }
    }
    if (!value.is_object())
        throw Error(source, field,
                    "expected a scheme name or a Quark layer config object, got " +
                        std::string(value.type_name()));
    quant::QuantScheme scheme;
    rethrowAtField(source, field,
                   [&] { scheme = quant::QuantScheme::fromQuarkLayerConfig(value, field); });
    return scheme;
}

json kvSpecToRecipeJson(const quant::QuantSpec& spec) {
    if (spec == fp8KvCacheSpec())
        return "fp8";
    return spec.toJson();
}

quant::QuantSpec kvSpecFromRecipeJson(const json& value, const std::string& source,
                                      const std::string& field) {
    if (value.is_string()) {
        if (value.get<std::string>() == "fp8")
            return fp8KvCacheSpec();
        throw Error(source, field,
                    "unknown KV cache type '" + value.get<std::string>() +
                        "' (known: fp8, or a Quark tensor spec object)");
    }
    if (!value.is_object() && !value.is_array())
        throw Error(source, field,
                    "expected \"fp8\" or a Quark tensor spec object, got " +
                        std::string(value.type_name()));
    quant::QuantSpec spec;
    rethrowAtField(source, field, [&] {
        spec = quant::QuantSpec::fromJson(value, quant::TensorRole::Output, field);
    });
    return spec;
}

} // namespace qs
