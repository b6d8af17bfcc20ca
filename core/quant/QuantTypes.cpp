#include "quant/QuantTypes.h"

#include <array>
#include <utility>

namespace qs::quant {

namespace {

template <typename E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<E, const char*>, N>& table,
                        std::string_view name) {
    for (const auto& [value, text] : table)
        if (name == text)
            return value;
    return std::nullopt;
}

template <typename E, std::size_t N>
std::string nameOf(const std::array<std::pair<E, const char*>, N>& table, E value) {
    for (const auto& [v, text] : table)
        if (v == value)
            return text;
    return "?";
}

template <typename E, std::size_t N>
std::vector<std::string> namesOf(const std::array<std::pair<E, const char*>, N>& table) {
    std::vector<std::string> out;
    for (const auto& entry : table)
        out.emplace_back(entry.second);
    return out;
}

const std::array<std::pair<Granularity, const char*>, 4> kGranularities{{
    {Granularity::PerTensor, "per_tensor"},
    {Granularity::PerChannel, "per_channel"},
    {Granularity::PerGroup, "per_group"},
    {Granularity::PerToken, "per_token"},
}};

const std::array<std::pair<ScaleType, const char*>, 5> kScaleTypes{{
    {ScaleType::Float, "float"},
    {ScaleType::Float32, "float32"},
    {ScaleType::Pow2, "pow2"},
    {ScaleType::E8M0, "e8m0"},
    {ScaleType::E4M3, "e4m3"},
}};

const std::array<std::pair<RoundMethod, const char*>, 1> kRoundMethods{{
    {RoundMethod::HalfEven, "half_even"},
}};

const std::array<std::pair<ObserverKind, const char*>, 3> kObservers{{
    {ObserverKind::MinMax, "minmax"},
    {ObserverKind::Percentile, "percentile"},
    {ObserverKind::Mse, "mse"},
}};

const std::array<std::pair<PackOrder, const char*>, 2> kPackOrders{{
    {PackOrder::Reorder, "reorder"},
    {PackOrder::Order, "order"},
}};

} // namespace

std::string granularityName(Granularity g) {
    return nameOf(kGranularities, g);
}
std::optional<Granularity> granularityFromName(std::string_view n) {
    return lookup(kGranularities, n);
}
std::vector<std::string> granularityNames() {
    return namesOf(kGranularities);
}

std::string scaleTypeName(ScaleType s) {
    return nameOf(kScaleTypes, s);
}
std::optional<ScaleType> scaleTypeFromName(std::string_view n) {
    // Quark spells the power-of-two scale "pof2" (ScaleType.pof2) or "power_of_2".
    if (n == "pof2" || n == "power_of_2")
        return ScaleType::Pow2;
    return lookup(kScaleTypes, n);
}
std::vector<std::string> scaleTypeNames() {
    return namesOf(kScaleTypes);
}

std::string roundMethodName(RoundMethod r) {
    return nameOf(kRoundMethods, r);
}
std::optional<RoundMethod> roundMethodFromName(std::string_view n) {
    return lookup(kRoundMethods, n);
}

std::string observerName(ObserverKind o) {
    return nameOf(kObservers, o);
}
std::optional<ObserverKind> observerFromName(std::string_view n) {
    return lookup(kObservers, n);
}
std::vector<std::string> observerNames() {
    return namesOf(kObservers);
}

std::string packOrderName(PackOrder p) {
    return nameOf(kPackOrders, p);
}
std::optional<PackOrder> packOrderFromName(std::string_view n) {
    return lookup(kPackOrders, n);
}

std::string encodingName(Encoding e) {
    switch (e) {
    case Encoding::Int:
        return "int";
    case Encoding::Float:
        return "float";
    case Encoding::Mx:
        return "mx";
    case Encoding::NvFp4:
        return "nvfp4";
    case Encoding::BlockFloat:
        return "block";
    case Encoding::PassThrough:
        return "passthrough";
    }
    return "?";
}

} // namespace qs::quant
