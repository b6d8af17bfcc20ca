#include "analysis/LayerReport.h"

#include "analysis/ExpertRouting.h"

#include <algorithm>
#include <cmath>

namespace qs {

namespace {

nlohmann::json number(double v) {
    // JSON has no infinities or NaN: write null (an exact match has an infinite SQNR).
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json numbers(const std::vector<float>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (float x : v)
        a.push_back(number(x));
    return a;
}

} // namespace

nlohmann::json toJson(const ErrorMetrics& m) {
    if (!m.valid)
        return nullptr;
    return {{"mse", number(m.mse)},
            {"sqnr_db", number(m.sqnrDb)},
            {"cosine", number(m.cosine)},
            {"max_abs", number(m.maxAbs)},
            {"mean_relative_error", number(m.meanRelative)}};
}

nlohmann::json toJson(const Histogram& h) {
    if (h.counts.empty())
        return nullptr;
    return {{"lo", number(h.lo)}, {"hi", number(h.hi)}, {"counts", h.counts}};
}

std::vector<std::pair<std::string, double>> AnalysisReport::outlierRanking() const {
    std::vector<std::pair<std::string, double>> r;
    for (const LayerReport& l : layers)
        r.emplace_back(l.name, l.outlierScore);
    std::stable_sort(r.begin(), r.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return r;
}

nlohmann::json AnalysisReport::toJson(bool withChannels) const {
    nlohmann::json layersJson = nlohmann::json::object();
    for (const LayerReport& l : layers) {
        nlohmann::json input = {{"tokens", l.input.tokens},
                                {"absmax", number(l.inputAbsmax)},
                                {"max_kurtosis", number(l.maxKurtosis)},
                                {"outlier_score", number(l.outlierScore)},
                                {"histogram", qs::toJson(l.input.histogram)},
                                {"quantized_histogram", qs::toJson(l.input.quantizedHistogram)}};
        if (withChannels) {
            input["channels"] = {{"min", numbers(l.input.min)},
                                 {"max", numbers(l.input.max)},
                                 {"absmax", numbers(l.input.absmax)},
                                 {"percentile", numbers(l.input.percentile)},
                                 {"percentile_level", l.input.percentileLevel},
                                 {"kurtosis", numbers(l.input.kurtosis)}};
            input["token_absmax"] = numbers(l.input.tokenAbsmax);
        }
        layersJson[l.name] = {
            {"kind", l.kind},
            {"block", l.block},
            {"shape", l.shape},
            {"quantized", l.quantized},
            {"scheme", l.scheme},
            {"note", l.note},
            {"weight_error", qs::toJson(l.weight)},
            {"output_error_local", qs::toJson(l.outputLocal)},
            {"kl_proxy", number(l.klProxy)},
            {"output_error_accumulated", qs::toJson(l.outputAccumulated)},
            {"input_quantization_error", qs::toJson(l.inputQuantization)},
            {"input_drift", qs::toJson(l.inputDrift)},
            {"input", input},
            {"weight_histogram", qs::toJson(l.weightHistogram)},
            {"weight_quantized_histogram", qs::toJson(l.weightQuantizedHistogram)}};
        if (!l.transforms.empty())
            layersJson[l.name]["transforms"] = l.transforms;
        if (l.outputLocalRoundToNearest.valid)
            layersJson[l.name]["round_to_nearest"] = {
                {"weight_error", qs::toJson(l.weightRoundToNearest)},
                {"output_error_local", qs::toJson(l.outputLocalRoundToNearest)}};
        if (withChannels && l.ranges.valid())
            layersJson[l.name]["ranges_before_after"] = {
                {"transform", l.ranges.transform},
                {"input_absmax_before", numbers(l.ranges.inputAbsmaxBefore)},
                {"input_absmax_after", numbers(l.input.absmax)},
                {"weight_absmax_before", numbers(l.ranges.weightAbsmaxBefore)},
                {"weight_absmax_after", numbers(l.ranges.weightAbsmaxAfter)}};
        if (!l.parts.empty()) {
            nlohmann::json parts = nlohmann::json::array();
            for (const PartReport& p : l.parts)
                parts.push_back({{"name", p.name},
                                 {"rows", {p.rowBegin, p.rowBegin + p.rows}},
                                 {"weight_error", qs::toJson(p.weight)},
                                 {"output_error_local", qs::toJson(p.outputLocal)}});
            layersJson[l.name]["parts"] = parts;
        }
    }
    nlohmann::json ranking = nlohmann::json::array();
    for (const auto& [name, score] : outlierRanking())
        ranking.push_back({{"layer", name}, {"outlier_score", number(score)}});
    nlohmann::json j = {{"model", model},
                        {"calibration_samples", calibrationSamples},
                        {"seq_len", seqLen},
                        {"seconds", seconds},
                        {"recipe", recipe},
                        {"layers", layersJson},
                        {"outlier_ranking", ranking}};
    // Mixture-of-experts models: calibration tokens per expert, rarely routed ones flagged.
    const std::vector<ExpertTokens> experts = expertRouting(layers);
    if (!experts.empty()) {
        nlohmann::json rows = nlohmann::json::array();
        for (const ExpertTokens& e : experts)
            rows.push_back({{"expert", e.expert},
                            {"block", e.block},
                            {"tokens", e.tokens},
                            {"share_of_even", number(e.shareOfEven)},
                            {"rare", e.rare}});
        j["experts"] = rows;
    }
    return j;
}

} // namespace qs
