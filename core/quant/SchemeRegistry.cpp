#include "quant/SchemeRegistry.h"

#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <algorithm>
#include <functional>

namespace qs::quant {

namespace {

size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// Up to three names within a few edits of `typed` (a quarter of its length, at least 2), nearest
// first; else up to three that contain it or that it contains (a suffix left off or added).
std::vector<std::string> closestNames(std::string_view typed,
                                      const std::vector<std::string>& names) {
    std::vector<std::pair<size_t, std::string>> near;
    const size_t limit = std::max<size_t>(2, typed.size() / 4);
    for (const std::string& n : names)
        if (const size_t d = editDistance(typed, n); d <= limit)
            near.emplace_back(d, n);
    if (near.empty() && typed.size() >= 3)
        for (const std::string& n : names)
            if (n.find(typed) != std::string::npos ||
                std::string_view(typed).find(n) != std::string_view::npos)
                near.emplace_back(editDistance(typed, n), n);
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (size_t i = 0; i < near.size() && i < 3; ++i)
        out.push_back(near[i].second);
    return out;
}

// ---- spec builders (each mirrors one Quark *Spec helper with the arguments the scheme uses) --

QuantSpec intTensor(DataType d, bool sym, bool dynamic, ObserverKind obs = ObserverKind::MinMax) {
    QuantSpec s = QuantSpec::defaults(d);
    s.symmetric = sym;
    s.isDynamic = dynamic;
    s.observer = obs;
    return s;
}

QuantSpec intChannel(DataType d, bool sym, ScaleType scale = ScaleType::Float) {
    QuantSpec s = QuantSpec::defaults(d);
    s.granularity = Granularity::PerChannel;
    s.chAxis = 0;
    s.symmetric = sym;
    s.scaleType = scale;
    return s;
}

// Quark's current schemes group along ch_axis=-1; its legacy configs said ch_axis=1 (the same
// axis for 2-D weights). Kept as written so the exported config reads like Quark's.
QuantSpec intGroup(DataType d, int groupSize, bool sym, int axis = -1, bool dynamic = false) {
    QuantSpec s = QuantSpec::defaults(d);
    s.granularity = Granularity::PerGroup;
    s.chAxis = axis;
    s.groupSize = groupSize;
    s.symmetric = sym;
    s.isDynamic = dynamic;
    return s;
}

QuantSpec perToken(DataType d) {
    QuantSpec s = QuantSpec::defaults(d);
    s.granularity = Granularity::PerToken;
    s.isDynamic = true;
    return s;
}

QuantSpec fp8Tensor(bool dynamic, ScaleType scale = ScaleType::Float) {
    QuantSpec s = QuantSpec::defaults(DataType::Fp8E4M3);
    s.isDynamic = dynamic;
    s.scaleType = scale;
    return s;
}

QuantSpec fp8Channel() {
    QuantSpec s = QuantSpec::defaults(DataType::Fp8E4M3);
    s.granularity = Granularity::PerChannel;
    s.chAxis = 0;
    return s;
}

QuantSpec block(DataType d, bool dynamic) {
    QuantSpec s = QuantSpec::defaults(d);
    s.isDynamic = dynamic;
    return s;
}

QuantScheme make(QuantSpec w, std::optional<QuantSpec> in = std::nullopt,
                 std::optional<QuantSpec> out = std::nullopt) {
    QuantScheme s;
    s.weight = std::move(w);
    s.input = std::move(in);
    s.output = std::move(out);
    return s;
}

struct Entry {
    SchemeName info; // info.groupSize is filled in from the built scheme (finish())
    std::function<QuantScheme(int groupSize)> build;
};

std::vector<Entry> makeEntries() {
    using D = DataType;
    std::vector<Entry> e;
    auto add = [&](const char* name, const char* desc, std::function<QuantScheme(int)> f,
                   bool legacy = false, bool takesGroup = false) {
        e.push_back({{name, desc, legacy, takesGroup, 0}, std::move(f)});
    };

    // ---- Quark 0.11+ QuantizationSchemeCollection ----
    for (int g : {32, 64, 128}) {
        const std::string gs = std::to_string(g);
        e.push_back(
            {{"int4_wo_" + gs, "INT4 weight-only, symmetric, per group of " + gs, false, false, 0},
             [g](int) { return make(intGroup(D::Int4, g, true)); }});
    }
    add("int4_wo_per_channel", "INT4 weight-only, symmetric, per output channel",
        [](int) { return make(intChannel(D::Int4, true)); });
    add("int4_wa_64", "INT4 weight per group of 64 + INT4 dynamic activations per group of 64",
        [](int) {
            return make(intGroup(D::Int4, 64, true), intGroup(D::Int4, 64, true, -1, true));
        });
    for (int g : {32, 64, 128}) {
        const std::string gs = std::to_string(g);
        e.push_back({{"uint4_wo_" + gs, "UINT4 weight-only, asymmetric, per group of " + gs, false,
                      false, 0},
                     [g](int) { return make(intGroup(D::Uint4, g, false)); }});
    }
    add("uint4_wo_per_channel", "UINT4 weight-only, asymmetric, per output channel",
        [](int) { return make(intChannel(D::Uint4, false)); });
    add("int8", "INT8 weight + INT8 activations, per tensor, symmetric, static",
        [](int) { return make(intTensor(D::Int8, true, false), intTensor(D::Int8, true, false)); });
    add("fp8", "FP8 E4M3 weight + activations, per tensor, static",
        [](int) { return make(fp8Tensor(false), fp8Tensor(false)); });
    add("ptpc_fp8", "FP8 E4M3 weight per channel (static) + activations per token (dynamic)",
        [](int) { return make(fp8Channel(), perToken(D::Fp8E4M3)); });
    add("mxfp4", "MXFP4 weight (static) + MXFP4 activations (dynamic)",
        [](int) { return make(block(D::MxFp4, false), block(D::MxFp4, true)); });
    add("mxfp4_weight_only", "MXFP4 weight-only", [](int) { return make(block(D::MxFp4, false)); });
    add("mxfp6_e3m2", "MXFP6 E3M2 weight (static) + activations (dynamic)",
        [](int) { return make(block(D::MxFp6E3M2, false), block(D::MxFp6E3M2, true)); });
    add("mxfp6_e2m3", "MXFP6 E2M3 weight (static) + activations (dynamic)",
        [](int) { return make(block(D::MxFp6E2M3, false), block(D::MxFp6E2M3, true)); });
    add("mxfp4_mxfp6_e2m3", "MXFP4 weight (static) + MXFP6 E2M3 activations (dynamic)",
        [](int) { return make(block(D::MxFp4, false), block(D::MxFp6E2M3, true)); });
    add("mxfp4_fp8", "MXFP4 weight (static) + FP8 E4M3 activations per tensor (static)",
        [](int) { return make(block(D::MxFp4, false), fp8Tensor(false)); });
    add("int4_fp8",
        "W4A8: weight FP8 per tensor then INT4 per channel (progressive), FP8 dynamic activations",
        [](int) {
            QuantScheme s = make(intChannel(D::Int4, true, ScaleType::Float32),
                                 fp8Tensor(true, ScaleType::Float32));
            s.weightPreStage = fp8Tensor(false, ScaleType::Float32);
            return s;
        });
    add("mx6", "Quark MX6 weight + activations (blocks of 32)",
        [](int) { return make(block(D::Mx6, false), block(D::Mx6, true)); });
    add("bfp16", "Quark BFP16 weight + activations (blocks of 8)",
        [](int) { return make(block(D::Bfp16, false), block(D::Bfp16, true)); });
    add("nvfp4", "NVFP4 weight (static) + activations (dynamic groups, static tensor scale)",
        [](int) { return make(block(D::NvFp4, false), block(D::NvFp4, true)); });

    // ---- legacy names (Quark < 0.11 LLM PTQ example), kept as aliases ----
    auto legacyGroup = [&](const char* name, const char* desc, D d, bool sym) {
        add(
            name, desc, [d, sym](int g) { return make(intGroup(d, g, sym, 1)); }, true, true);
    };
    legacyGroup("w_int4_per_group_sym",
                "INT4 weight-only, symmetric, per group of the group size (default 128; "
                "32/64/128 = int4_wo_N)",
                D::Int4, true);
    legacyGroup("w_int4_per_group_asym",
                "INT4 weight-only, asymmetric, per group of the group size (default 128)", D::Int4,
                false);
    legacyGroup("w_uint4_per_group_asym",
                "UINT4 weight-only, asymmetric, per group of the group size (default 128; "
                "32/64/128 = uint4_wo_N)",
                D::Uint4, false);
    legacyGroup("w_uint4_per_group_sym",
                "UINT4 weight-only, symmetric, per group of the group size (default 128)", D::Uint4,
                true);
    legacyGroup("w_int2_per_group_asym",
                "INT2 weight-only, asymmetric, per group of the group size (default 128)", D::Int2,
                false);
    legacyGroup("w_int8_per_group_sym",
                "INT8 weight-only, symmetric, per group of the group size (default 128)", D::Int8,
                true);
    legacyGroup("w_uint8_per_group_asym",
                "UINT8 weight-only, asymmetric, per group of the group size (default 128)",
                D::Uint8, false);
    add(
        "w_uint4_a_bfloat16_per_group_asym",
        "UINT4 weight per group of the group size (asymmetric, default 128) + bf16 activations",
        [](int g) { return make(intGroup(D::Uint4, g, false, 1), block(D::BFloat16, false)); },
        true, true);
    add(
        "w_int4_per_channel_sym", "= int4_wo_per_channel",
        [](int) { return make(intChannel(D::Int4, true)); }, true);
    add(
        "w_int4_per_channel_asym", "INT4 weight per channel, asymmetric",
        [](int) { return make(intChannel(D::Int4, false)); }, true);
    add(
        "w_uint4_per_channel_sym", "UINT4 weight per channel, symmetric",
        [](int) { return make(intChannel(D::Uint4, true)); }, true);
    add(
        "w_uint4_per_channel_asym", "= uint4_wo_per_channel",
        [](int) { return make(intChannel(D::Uint4, false)); }, true);
    add(
        "w_int8_per_tensor_sym", "INT8 weight-only per tensor",
        [](int) { return make(intTensor(D::Int8, true, false)); }, true);
    add(
        "w_int8_a_int8_per_tensor_sym", "= int8",
        [](int) { return make(intTensor(D::Int8, true, false), intTensor(D::Int8, true, false)); },
        true);
    add(
        "w_int8_a_int8_per_tensor_sym_dynamic", "INT8 weight + activations per tensor, dynamic",
        [](int) { return make(intTensor(D::Int8, true, true), intTensor(D::Int8, true, true)); },
        true);
    add(
        "w_int8_a_int8_per_token_dynamic", "INT8 weight per channel + activations per token",
        [](int) { return make(intChannel(D::Int8, true), perToken(D::Int8)); }, true);
    add(
        "w_int8_per_channel_a_int8_per_tensor_sym",
        "INT8 weight per channel + activations per tensor (static)",
        [](int) { return make(intChannel(D::Int8, true), intTensor(D::Int8, true, false)); }, true);
    add(
        "w_int8_per_channel_a_int8_per_tensor_sym_dynamic",
        "INT8 weight per channel + activations per tensor (dynamic)",
        [](int) { return make(intChannel(D::Int8, true), intTensor(D::Int8, true, true)); }, true);
    add(
        "w_uint8_a_uint8_per_tensor_asym", "UINT8 weight + activations per tensor, asymmetric",
        [](int) {
            return make(intTensor(D::Uint8, false, false), intTensor(D::Uint8, false, false));
        },
        true);
    auto observed = [&](const char* name, const char* desc, D d, ObserverKind o) {
        add(
            name, desc,
            [d, o](int) { return make(intTensor(d, true, false, o), intTensor(d, true, false)); },
            true);
    };
    observed("w_int8_per_tensor_percentile", "INT8 per tensor, percentile weight observer", D::Int8,
             ObserverKind::Percentile);
    observed("w_int8_per_tensor_mse", "INT8 per tensor, MSE weight observer", D::Int8,
             ObserverKind::Mse);
    observed("w_uint8_per_tensor_percentile", "UINT8 (symmetric) per tensor, percentile observer",
             D::Uint8, ObserverKind::Percentile);
    observed("w_uint8_per_tensor_mse", "UINT8 (symmetric) per tensor, MSE observer", D::Uint8,
             ObserverKind::Mse);
    add(
        "w_fp8_a_fp8", "= fp8", [](int) { return make(fp8Tensor(false), fp8Tensor(false)); }, true);
    add(
        "w_fp8_a_fp8_o_fp8", "FP8 weight + input + output per tensor",
        [](int) { return make(fp8Tensor(false), fp8Tensor(false), fp8Tensor(false)); }, true);
    add(
        "w_fp8_per_channel_sym", "FP8 weight per channel + input/output per tensor",
        [](int) { return make(fp8Channel(), fp8Tensor(false), fp8Tensor(false)); }, true);
    auto mxLegacy = [&](const char* name, const char* desc, D w, std::optional<D> a) {
        add(
            name, desc,
            [w, a](int) {
                return make(block(w, false),
                            a ? std::optional<QuantSpec>(block(*a, true)) : std::nullopt);
            },
            true);
    };
    mxLegacy("w_mxfp4_a_mxfp4", "= mxfp4", D::MxFp4, D::MxFp4);
    mxLegacy("w_mxfp4", "= mxfp4_weight_only", D::MxFp4, std::nullopt);
    mxLegacy("w_mxfp4_a_mxfp6", "= mxfp4_mxfp6_e2m3", D::MxFp4, D::MxFp6E2M3);
    mxLegacy("w_mxfp6_e3m2", "MXFP6 E3M2 weight-only", D::MxFp6E3M2, std::nullopt);
    mxLegacy("w_mxfp6_e2m3", "MXFP6 E2M3 weight-only", D::MxFp6E2M3, std::nullopt);
    mxLegacy("w_mxfp6_e3m2_a_mxfp6_e3m2", "= mxfp6_e3m2", D::MxFp6E3M2, D::MxFp6E3M2);
    mxLegacy("w_mxfp6_e2m3_a_mxfp6_e2m3", "= mxfp6_e2m3", D::MxFp6E2M3, D::MxFp6E2M3);
    mxLegacy("w_mxfp8", "MXFP8 E4M3 weight-only", D::MxFp8E4M3, std::nullopt);
    mxLegacy("w_mxfp8_a_mxfp8", "MXFP8 E4M3 weight + activations", D::MxFp8E4M3, D::MxFp8E4M3);
    mxLegacy("w_mxint8", "MXINT8 weight-only", D::MxInt8, std::nullopt);
    mxLegacy("w_mx6", "MX6 weight-only", D::Mx6, std::nullopt);
    mxLegacy("w_mx6_a_mx6", "= mx6", D::Mx6, D::Mx6);
    add(
        "w_mxfp4_a_fp8", "= mxfp4_fp8",
        [](int) { return make(block(D::MxFp4, false), fp8Tensor(false)); }, true);
    add(
        "w_bfp16", "BFP16 weight-only", [](int) { return make(block(D::Bfp16, false)); }, true);
    add(
        "w_bfp16_a_bfp16", "= bfp16",
        [](int) { return make(block(D::Bfp16, false), block(D::Bfp16, true)); }, true);
    add(
        "fp4_block16_scale_e4m3", "= nvfp4",
        [](int) { return make(block(D::NvFp4, false), block(D::NvFp4, true)); }, true);
    add(
        "w_fp4_scale_fp8", "NVFP4-style weight-only (FP4/16 + FP8 scale)",
        [](int) { return make(block(D::NvFp4, false)); }, true);
    add(
        "w_fp4_a_fp4_scale_fp8", "NVFP4-style weight + dynamic activations",
        [](int) { return make(block(D::NvFp4, false), block(D::NvFp4, true)); }, true);
    // Names Quark's own deprecation table maps onto the ones above.
    const std::pair<const char*, const char*> renamed[] = {
        {"w_mx_fp4_a_mx_fp4_sym", "w_mxfp4_a_mxfp4"},
        {"w_mxfp4_a_mxfp4_sym", "w_mxfp4_a_mxfp4"},
        {"w_mx_fp6_e3m2_sym", "w_mxfp6_e3m2"},
        {"w_mx_fp6_e2m3_sym", "w_mxfp6_e2m3"},
        {"w_mx_int8_per_group_sym", "w_mxint8"},
        {"w_mx_fp6_e2m3_a_mx_fp6_e2m3", "w_mxfp6_e2m3_a_mxfp6_e2m3"},
        {"w_mx_fp6_e3m2_a_mx_fp6_e3m2", "w_mxfp6_e3m2_a_mxfp6_e3m2"},
        {"w_mx_fp4_a_mx_fp6_sym", "w_mxfp4_a_mxfp6"},
        {"w_mx_fp8_a_mx_fp8", "w_mxfp8_a_mxfp8"},
    };
    for (const auto& [oldName, target] : renamed) {
        for (const Entry& existing : std::vector<Entry>(e)) {
            if (existing.info.name == target) {
                e.push_back(
                    {{oldName, std::string("= ") + target, true, false, 0}, existing.build});
                break;
            }
        }
    }
    return e;
}

// Fills in what each entry's scheme says (its group size) and spells out the aliases: "= int8"
// becomes "Older Quark name of int8: INT8 weight + ...", so every entry explains itself in one
// line wherever it is listed.
std::vector<Entry> finish(std::vector<Entry> e) {
    for (Entry& entry : e) {
        const QuantScheme s = entry.build(entry.info.takesGroupSize ? kDefaultGroupSize : 0);
        entry.info.groupSize =
            s.weight.granularity == Granularity::PerGroup ? int(s.weight.groupSize) : 0;
    }
    const std::vector<Entry> original = e;
    auto descriptionOf = [&](const std::string& name) -> const std::string* {
        for (const Entry& t : original)
            if (t.info.name == name)
                return &t.info.description;
        return nullptr;
    };
    for (Entry& entry : e) {
        std::string target;
        const std::string* d = &entry.info.description;
        // Follow "= name" to the name that says what it is (renamed names point at aliases).
        for (int hops = 0; d && d->rfind("= ", 0) == 0 && hops < 4; ++hops) {
            target = d->substr(2);
            d = descriptionOf(target);
        }
        if (!target.empty() && d)
            entry.info.description = "Older Quark name of " + target + ": " + *d;
    }
    return e;
}

const std::vector<Entry>& entries() {
    static const std::vector<Entry> table = finish(makeEntries());
    return table;
}

// Quark schemes known by name that this engine does not implement (E5M3 scales).
bool isKnownUnsupported(std::string_view name) {
    return name == "amdfp4" || name == "amdfp4_g32" || name == "amdfp4_global16" ||
           name == "amdfp4_global32";
}

} // namespace

const std::vector<SchemeName>& schemeNames() {
    static const std::vector<SchemeName> names = [] {
        std::vector<SchemeName> out;
        for (const Entry& e : entries())
            out.push_back(e.info);
        return out;
    }();
    return names;
}

const SchemeName* findSchemeName(std::string_view name) {
    for (const SchemeName& s : schemeNames())
        if (s.name == name)
            return &s;
    return nullptr;
}

QuantScheme resolveScheme(std::string_view name, int groupSize) {
    for (const Entry& e : entries()) {
        if (e.info.name != name)
            continue;
        if (groupSize < 0)
            throw Error("scheme", "group_size",
                        "must be positive, got " + std::to_string(groupSize));
        if (!e.info.takesGroupSize && groupSize != 0 && groupSize != e.info.groupSize) {
            const std::string given = std::to_string(groupSize);
            throw Error("scheme", "group_size",
                        e.info.groupSize == 0
                            ? "scheme '" + e.info.name +
                                  "' does not quantize its weight per group and takes no group "
                                  "size (got " +
                                  given + ")"
                            : "scheme '" + e.info.name + "' fixes its group size at " +
                                  std::to_string(e.info.groupSize) + " (got " + given +
                                  "); Quark's per-group names take one "
                                  "(w_int4_per_group_sym, w_uint4_per_group_asym, ...)");
        }
        QuantScheme s =
            e.build(e.info.takesGroupSize && groupSize > 0 ? groupSize : kDefaultGroupSize);
        s.name = e.info.name;
        s.description = e.info.description;
        s.validate("scheme '" + e.info.name + "'");
        return s;
    }
    if (isKnownUnsupported(name))
        throw Error("scheme", "name",
                    "Quark scheme '" + std::string(name) +
                        "' uses FP8 E5M3 scales, which are not implemented");
    // The names closest to what was typed first: a list of ~80 names hides the one meant.
    std::vector<std::string> names;
    for (const Entry& e : entries())
        names.push_back(e.info.name);
    const std::vector<std::string> close = closestNames(name, names);
    if (!close.empty()) {
        std::string list;
        for (const std::string& n : close)
            list += (list.empty() ? "'" : "', '") + n;
        throw Error("scheme", "name",
                    "unknown scheme '" + std::string(name) + "'; did you mean " + list + "'? (" +
                        std::to_string(names.size()) +
                        " names in all; the recipe panel's scheme box lists them)");
    }
    std::string valid;
    for (const std::string& n : names)
        valid += (valid.empty() ? "" : ", ") + n;
    throw Error("scheme", "name", "unknown scheme '" + std::string(name) + "'; valid: " + valid);
}

} // namespace qs::quant
