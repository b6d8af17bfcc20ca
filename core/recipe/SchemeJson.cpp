#include "recipe/SchemeJson.h"

#include "quant/SchemeRegistry.h"
#include "recipe/Recipe.h"
#include "recipe/RecipeLimits.h"
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

std::optional<quant::QuantScheme> withGroupSize(const quant::QuantScheme& scheme, int64_t groupSize,
                                                const std::string& source,
                                                const std::string& field) {
    const quant::SchemeName* entry = quant::findSchemeName(scheme.name);
    if (!entry || !entry->takesGroupSize)
        return std::nullopt;
    if (!limits::groupSize.allows(groupSize))
        throw Error(source, field, limits::groupSize.refusal(groupSize));
    return quant::resolveScheme(scheme.name, int(groupSize));
}

json schemeToRecipeJson(const quant::QuantScheme& scheme) {
    if (!scheme.name.empty()) {
        try {
            if (quant::resolveScheme(scheme.name) == scheme)
                return scheme.name;
            const quant::SchemeName* entry = quant::findSchemeName(scheme.name);
            if (entry && entry->takesGroupSize &&
                scheme.weight.granularity == quant::Granularity::PerGroup &&
                quant::resolveScheme(scheme.name, int(scheme.weight.groupSize)) == scheme)
                return json{{"name", scheme.name}, {"group_size", scheme.weight.groupSize}};
        } catch (const Error&) {
            // a name that no longer resolves: fall back to the full form below
        }
    }
    return scheme.toQuarkLayerConfig();
}

namespace {

// {"name": "w_uint4_per_group_asym", "group_size": 32}: a registry name with its group size.
quant::QuantScheme namedSchemeFromJson(const json& value, const std::string& source,
                                       const std::string& field) {
    for (const auto& item : value.items())
        if (item.key() != "name" && item.key() != "group_size")
            throw Error(source, field + "." + item.key(),
                        "unknown key (a named scheme has \"name\" and \"group_size\"; a Quark "
                        "layer config has \"weight\", \"input_tensors\", ...)");
    const json& name = value["name"];
    if (!name.is_string())
        throw Error(source, field + ".name",
                    "expected a scheme name, got " + std::string(name.type_name()));
    quant::QuantScheme scheme;
    try {
        scheme = quant::resolveScheme(name.get<std::string>());
    } catch (const Error& e) {
        throw Error(source, field + ".name", e.reason());
    }
    const auto it = value.find("group_size");
    if (it == value.end() || it->is_null())
        return scheme;
    if (!it->is_number_integer())
        throw Error(source, field + ".group_size",
                    "expected an integer, got " +
                        (it->is_number() ? it->dump() : std::string(it->type_name())));
    const int64_t groupSize = it->get<int64_t>();
    const std::optional<quant::QuantScheme> sized =
        withGroupSize(scheme, groupSize, source, field + ".group_size");
    if (sized)
        return *sized;
    const quant::SchemeName* entry = quant::findSchemeName(scheme.name);
    if (entry && entry->groupSize == groupSize)
        return scheme; // the group size the name fixes, said again
    try {
        quant::resolveScheme(scheme.name, int(groupSize)); // says why
    } catch (const Error& e) {
        throw Error(source, field + ".group_size", e.reason());
    }
    throw Error(source, field + ".group_size", "scheme '" + scheme.name + "' takes no group size");
}

} // namespace

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
                    "expected a scheme name, a {\"name\", \"group_size\"} object or a Quark "
                    "layer config object, got " +
                        std::string(value.type_name()));
    if (value.contains("name"))
        return namedSchemeFromJson(value, source, field);
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
