#include "recipe/AlgorithmCatalog.h"

#include "util/Error.h"

#include <cmath>
#include <limits>

namespace qs {

namespace {

using nlohmann::json;

using ParamType = AlgorithmParamKind;

struct ParamDef {
    const char* name;
    ParamType type;
    bool nullable = false;
    double min = -std::numeric_limits<double>::infinity(); // Int / Number only
    double max = std::numeric_limits<double>::infinity();
    std::vector<std::string> choices = {}; // String / StringList entries, empty = any
    // What the algorithm uses when the recipe leaves the parameter out (Quark's dataclass
    // default); null: taken from the model (its family's scaling template or module names).
    json fallback = nullptr;

    ParamDef(const char* n, ParamType t) : name(n), type(t) {}
    ParamDef& orNull() {
        nullable = true;
        return *this;
    }
    ParamDef& range(double lo, double hi) {
        min = lo;
        max = hi;
        return *this;
    }
    ParamDef& oneOf(std::vector<std::string> c) {
        choices = std::move(c);
        return *this;
    }
    ParamDef& byDefault(json v) {
        fallback = std::move(v);
        return *this;
    }
};

struct AlgorithmDef {
    const char* name;
    const char* quarkName;
    bool runnable;
    int stage;
    std::vector<ParamDef> params;
};

// The algorithms, their parameters, bounds and defaults: the one table the recipe's validation,
// the GUI's algorithm panel and the transforms (algorithmParam) read. The transforms' factories
// are in algo/TransformFactory.cpp, keyed by these names.
const std::vector<AlgorithmDef>& catalog() {
    using T = ParamType;
    using P = ParamDef;
    constexpr double inf = std::numeric_limits<double>::infinity();
    static const std::vector<AlgorithmDef> defs = {
        {"gptq",
         "gptq",
         true,
         2,
         {P("block_size", T::Int).range(1, 1 << 20).byDefault(128),
          P("damp_percent", T::Number).range(0.0, 1.0).byDefault(0.01),
          P("desc_act", T::Bool).byDefault(true), P("static_groups", T::Bool).byDefault(true),
          P("inside_layer_modules", T::StringList), P("model_decoder_layers", T::String)}},
        {"gptaq",
         "gptaq",
         true,
         2,
         {P("block_size", T::Int).range(1, 1 << 20).byDefault(128),
          P("damp_percent", T::Number).range(0.0, 1.0).byDefault(0.01),
          P("alpha", T::Number).range(0.0, 1.0).byDefault(0.25),
          P("desc_act", T::Bool).byDefault(true), P("static_groups", T::Bool).byDefault(true),
          P("inside_layer_modules", T::StringList), P("model_decoder_layers", T::String)}},
        {"qronos",
         "qronos",
         true,
         2,
         {P("block_size", T::Int).range(1, 1 << 20).byDefault(128),
          P("desc_act", T::Bool).byDefault(true), P("static_groups", T::Bool).byDefault(true),
          P("alpha", T::Number).range(0.0, 1.0).byDefault(1e-3),
          P("beta", T::Number).range(1.0, 1e12).byDefault(1e4),
          P("inside_layer_modules", T::StringList), P("model_decoder_layers", T::String)}},
        {"awq",
         "awq",
         true,
         2,
         {P("scaling_layers", T::ObjectList), P("model_decoder_layers", T::String)}},
        {"smoothquant",
         "smooth",
         true,
         1,
         {P("alpha", T::Number).range(0.0, 1.0).byDefault(1.0),
          P("scale_clamp_min", T::Number).range(0.0, inf).byDefault(1e-3),
          P("scaling_layers", T::ObjectList), P("model_decoder_layers", T::String)}},
        {"autosmoothquant",
         "autosmoothquant",
         true,
         1,
         {P("scaling_layers", T::ObjectList).orNull(),
          P("model_decoder_layers", T::String).orNull(),
          P("compute_scale_loss", T::String).orNull().oneOf({"MSE", "MAE"}).byDefault("MSE")}},
        {"rotation",
         "rotation",
         true,
         0,
         {P("scaling_layers", T::Object).orNull(), P("r1", T::Bool).byDefault(true),
          P("r2", T::Bool).byDefault(false), P("r3", T::Bool).byDefault(false),
          P("r4", T::Bool).byDefault(false), P("rotation_size", T::Int).orNull().range(1, 1 << 20),
          P("random_r1", T::Bool).byDefault(false), P("random_r2", T::Bool).byDefault(false),
          P("backbone", T::String), P("model_decoder_layers", T::String), P("v_proj", T::String),
          P("o_proj", T::String), P("self_attn", T::String), P("mlp", T::String),
          P("online_r1_rotation", T::Bool).orNull().byDefault(false),
          P("online_config", T::Object).orNull(), P("trainable", T::Bool).byDefault(false),
          P("train_smooth", T::Bool).orNull().byDefault(false),
          P("smooth_positions", T::StringList).orNull().oneOf({"r1", "r2", "r4"})}},
    };
    return defs;
}

const AlgorithmDef* findAlgorithm(const std::string& name) {
    for (const auto& def : catalog())
        if (name == def.name)
            return &def;
    return nullptr;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

std::string typeName(ParamType t) {
    switch (t) {
    case ParamType::Bool:
        return "true/false";
    case ParamType::Int:
        return "an integer";
    case ParamType::Number:
        return "a number";
    case ParamType::String:
        return "a string";
    case ParamType::StringList:
        return "a list of strings";
    case ParamType::ObjectList:
        return "a list of objects";
    case ParamType::Object:
        return "an object";
    }
    return "?";
}

void checkChoice(const ParamDef& def, const std::string& value, const std::string& source,
                 const std::string& field) {
    if (def.choices.empty())
        return;
    for (const auto& c : def.choices)
        if (c == value)
            return;
    throw Error(source, field, "'" + value + "' is not one of " + joined(def.choices));
}

void checkParam(const ParamDef& def, const json& v, const std::string& source,
                const std::string& field) {
    if (v.is_null()) {
        if (!def.nullable)
            throw Error(source, field, "must not be null (expected " + typeName(def.type) + ")");
        return;
    }
    auto wrongType = [&] {
        throw Error(source, field,
                    "expected " + typeName(def.type) + ", got " + std::string(v.type_name()));
    };
    auto checkRange = [&](double x) {
        if (!std::isfinite(x) || x < def.min || x > def.max)
            throw Error(source, field,
                        "value " + v.dump() + " outside [" + json(def.min).dump() + ", " +
                            json(def.max).dump() + "]");
    };
    switch (def.type) {
    case ParamType::Bool:
        if (!v.is_boolean())
            wrongType();
        break;
    case ParamType::Int:
        if (!v.is_number_integer())
            wrongType();
        checkRange(v.is_number_unsigned() ? double(v.get<uint64_t>()) : double(v.get<int64_t>()));
        break;
    case ParamType::Number:
        if (!v.is_number())
            wrongType();
        checkRange(v.get<double>());
        break;
    case ParamType::String:
        if (!v.is_string())
            wrongType();
        checkChoice(def, v.get<std::string>(), source, field);
        break;
    case ParamType::StringList:
        if (!v.is_array())
            wrongType();
        for (size_t i = 0; i < v.size(); ++i) {
            const std::string itemField = field + "[" + std::to_string(i) + "]";
            if (!v[i].is_string())
                throw Error(source, itemField,
                            "expected a string, got " + std::string(v[i].type_name()));
            checkChoice(def, v[i].get<std::string>(), source, itemField);
        }
        break;
    case ParamType::ObjectList:
        if (!v.is_array())
            wrongType();
        for (size_t i = 0; i < v.size(); ++i)
            if (!v[i].is_object())
                throw Error(source, field + "[" + std::to_string(i) + "]",
                            "expected an object, got " + std::string(v[i].type_name()));
        break;
    case ParamType::Object:
        if (!v.is_object())
            wrongType();
        break;
    }
}

} // namespace

const std::vector<AlgorithmInfo>& algorithmCatalog() {
    static const std::vector<AlgorithmInfo> infos = [] {
        std::vector<AlgorithmInfo> out;
        for (const auto& def : catalog()) {
            AlgorithmInfo info{def.name, def.quarkName, {}, def.runnable, def.stage};
            for (const auto& p : def.params)
                info.parameters.push_back(
                    {p.name, p.type, typeName(p.type), p.nullable, p.choices, p.fallback});
            out.push_back(std::move(info));
        }
        return out;
    }();
    return infos;
}

const AlgorithmInfo* findAlgorithmInfo(const std::string& name) {
    for (const AlgorithmInfo& info : algorithmCatalog())
        if (info.name == name)
            return &info;
    return nullptr;
}

const std::vector<std::string>& knownAlgorithmNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& def : catalog())
            out.push_back(def.name);
        return out;
    }();
    return names;
}

void validateAlgorithmParams(const std::string& name, const json& params, const std::string& source,
                             const std::string& fieldPrefix) {
    const AlgorithmDef* def = findAlgorithm(name);
    if (!def)
        throw Error(source, fieldPrefix + ".name",
                    "unknown algorithm '" + name + "' (known: " + joined(knownAlgorithmNames()) +
                        ")");
    if (!params.is_object())
        throw Error(source, fieldPrefix, "algorithm parameters must be a JSON object");
    for (const auto& item : params.items()) {
        const std::string field = fieldPrefix + "." + item.key();
        const ParamDef* param = nullptr;
        for (const auto& p : def->params)
            if (item.key() == p.name)
                param = &p;
        if (!param) {
            std::vector<std::string> valid;
            for (const auto& p : def->params)
                valid.push_back(p.name);
            throw Error(source, field,
                        "unknown parameter of " + name + " (known: " + joined(valid) + ")");
        }
        checkParam(*param, item.value(), source, field);
    }
    // Quark's own cross-field rules, so a recipe Quark would refuse is refused here first.
    auto flag = [&](const char* key) { return algorithmParam(name, params, key).get<bool>(); };
    if ((name == "gptq" || name == "gptaq" || name == "qronos") && flag("desc_act") &&
        !flag("static_groups"))
        throw Error(source, fieldPrefix + ".static_groups",
                    "desc_act needs static_groups (Quark refuses desc_act without it)");
    if (name == "rotation") {
        if (flag("train_smooth") && !flag("trainable"))
            throw Error(source, fieldPrefix + ".train_smooth", "needs trainable: true");
        if (flag("trainable") && flag("r3"))
            throw Error(source, fieldPrefix + ".r3", "r3 cannot be trainable (as in Quark)");
        if (!flag("r1") && params.contains("online_r1_rotation") &&
            !params["online_r1_rotation"].is_null())
            throw Error(source, fieldPrefix + ".online_r1_rotation", "has no effect without r1");
    }
}

nlohmann::json algorithmParam(const std::string& algorithm, const nlohmann::json& params,
                              const std::string& name) {
    if (params.is_object()) {
        const auto it = params.find(name);
        if (it != params.end() && !it->is_null())
            return *it;
    }
    const AlgorithmDef* def = findAlgorithm(algorithm);
    if (def)
        for (const auto& p : def->params)
            if (name == p.name)
                return p.fallback;
    throw Error("algorithm catalog", algorithm + "." + name,
                "no such parameter (a transform asked for a name the catalog does not have)");
}

std::string quarkAlgorithmName(const std::string& name) {
    const AlgorithmDef* def = findAlgorithm(name);
    return def ? def->quarkName : name;
}

std::optional<std::string> algorithmFromQuarkName(const std::string& quarkName) {
    if (quarkName == "quarot")
        return std::string("rotation");
    for (const auto& def : catalog())
        if (quarkName == def.quarkName)
            return std::string(def.name);
    return std::nullopt;
}

} // namespace qs
