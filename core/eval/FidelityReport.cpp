#include "eval/FidelityReport.h"

#include "util/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace qs {

namespace {

// llama.cpp's mean_and_uncertainty: the mean of n values from their sum and sum of squares, and
// its standard error (0 for ten values or fewer, where it would mean little).
Estimate meanAndError(double sum, double sum2, size_t n) {
    if (n < 1)
        return {};
    const double mean = sum / double(n);
    const double variance = sum2 / double(n) - mean * mean;
    return {mean, variance > 0 && n > 10 ? std::sqrt(variance / double(n - 1)) : 0.0};
}

// llama.cpp's covariance of two means (0 below ten values).
double covarianceOfMeans(double sumA, double sumB, double sumAB, size_t n) {
    if (n < 10)
        return 0.0;
    const double c = sumAB / double(n) - (sumA / double(n)) * (sumB / double(n));
    return c / double(n - 1);
}

// Linear interpolation between the sorted values around fraction × (n - 1), as llama.cpp's
// percentile(); level 0.5 is the median it prints.
double quantileOfSorted(const std::vector<double>& sorted, double level) {
    if (level <= 0)
        return sorted.front();
    if (level >= 1)
        return sorted.back();
    const double at = level * double(sorted.size() - 1);
    const size_t i = size_t(at);
    const double f = at - double(i);
    return (1 - f) * sorted[i] + f * sorted[std::min(i + 1, sorted.size() - 1)];
}

std::vector<Quantile> quantiles(std::vector<double> values, const std::vector<double>& levels) {
    std::sort(values.begin(), values.end());
    std::vector<Quantile> out;
    for (double level : levels)
        out.push_back({level, quantileOfSorted(values, level)});
    return out;
}

// The levels llama.cpp prints, largest first.
const std::vector<double> kKlLevels = {1.0,  0.999, 0.99, 0.95,  0.90, 0.5,
                                       0.10, 0.05,  0.01, 0.001, 0.0};
const std::vector<double> kDeltaPLevels = {1.0,  0.999, 0.99, 0.95, 0.90,  0.75, 0.5,
                                           0.25, 0.10,  0.05, 0.01, 0.001, 0.0};

std::string levelLabel(double level) {
    if (level >= 1)
        return "Maximum";
    if (level <= 0)
        return "Minimum";
    if (level == 0.5)
        return "Median ";
    char b[16];
    std::snprintf(b, sizeof b, "%4.1f%%  ", 100.0 * level);
    return b;
}

nlohmann::json estimateJson(const Estimate& e) {
    return {{"value", e.value}, {"error", e.error}};
}

nlohmann::json quantilesJson(const std::vector<Quantile>& qs) {
    nlohmann::json j = nlohmann::json::array();
    for (const Quantile& q : qs)
        j.push_back({{"level", q.level}, {"value", q.value}});
    return j;
}

} // namespace

void FidelitySamples::append(const FidelitySamples& more) {
    kl.insert(kl.end(), more.kl.begin(), more.kl.end());
    deltaP.insert(deltaP.end(), more.deltaP.begin(), more.deltaP.end());
    nllBase.insert(nllBase.end(), more.nllBase.begin(), more.nllBase.end());
    nllQuant.insert(nllQuant.end(), more.nllQuant.begin(), more.nllQuant.end());
    sameTop.insert(sameTop.end(), more.sameTop.begin(), more.sameTop.end());
}

FidelitySummary summarizeBriefly(const FidelitySamples& s) {
    FidelitySummary out;
    if (s.size() == 0)
        return out;
    double kl = 0;
    size_t same = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        kl += s.kl[i];
        same += s.sameTop[i];
    }
    out.klMean = kl / double(s.size());
    out.sameTop = double(same) / double(s.size());
    return out;
}

FidelityReport summarizeFidelity(const FidelitySamples& s, int resamples) {
    const size_t n = s.size();
    if (n == 0)
        throw Error("fidelity", "positions", "no scored position to compare");
    // The sums llama.cpp's kl_divergence_result keeps, in double, in position order.
    double nll = 0, nll2 = 0, base = 0, base2 = 0, nllBase = 0, kl = 0, kl2 = 0, dp = 0, dp2 = 0,
           dp4 = 0;
    size_t same = 0;
    for (size_t i = 0; i < n; ++i) {
        nll += s.nllQuant[i];
        nll2 += s.nllQuant[i] * s.nllQuant[i];
        base += s.nllBase[i];
        base2 += s.nllBase[i] * s.nllBase[i];
        nllBase += s.nllQuant[i] * s.nllBase[i];
        kl += s.kl[i];
        kl2 += s.kl[i] * s.kl[i];
        const double d = s.deltaP[i], d2 = d * d;
        dp += d;
        dp2 += d2;
        dp4 += d2 * d2;
        same += s.sameTop[i];
    }
    FidelityReport r;
    r.positions = int64_t(n);
    const Estimate logPpl = meanAndError(nll, nll2, n);
    const Estimate logPplBase = meanAndError(base, base2, n);
    r.perplexityQuant = {std::exp(logPpl.value), std::exp(logPpl.value) * logPpl.error};
    r.perplexityBase = {std::exp(logPplBase.value), std::exp(logPplBase.value) * logPplBase.error};
    const double cov = covarianceOfMeans(nll, base, nllBase, n);
    r.lnPerplexityCorrelation =
        logPpl.error > 0 && logPplBase.error > 0 ? cov / (logPpl.error * logPplBase.error) : 0.0;
    const double ratioError = std::sqrt(std::max(
        0.0, logPpl.error * logPpl.error + logPplBase.error * logPplBase.error - 2.0 * cov));
    r.lnPerplexityRatio = {logPpl.value - logPplBase.value, ratioError};
    r.perplexityRatio = {std::exp(r.lnPerplexityRatio.value),
                         std::exp(r.lnPerplexityRatio.value) * ratioError};
    const double pplCov = r.perplexityQuant.value * r.perplexityBase.value * cov;
    r.perplexityDifference = {
        r.perplexityQuant.value - r.perplexityBase.value,
        std::sqrt(std::max(0.0, r.perplexityQuant.error * r.perplexityQuant.error +
                                    r.perplexityBase.error * r.perplexityBase.error -
                                    2.0 * pplCov))};

    r.klMean = meanAndError(kl, kl2, n);
    r.klQuantiles = quantiles(s.kl, kKlLevels);
    r.deltaPMean = meanAndError(dp, dp2, n);
    r.deltaPQuantiles = quantiles(s.deltaP, kDeltaPLevels);
    const Estimate mse = meanAndError(dp2, dp4, n);
    const double rms = std::sqrt(mse.value);
    r.deltaPRms = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
    const double p = double(same) / double(n);
    r.sameTop = {p, n > 1 ? std::sqrt(p * (1 - p) / double(n - 1)) : 0.0};

    // Percentile bootstrap of the two headline means: resample the positions with replacement,
    // take the 2.5 % and 97.5 % quantiles of the resampled means. Positions of one window are
    // correlated, so like llama.cpp's ± this treats them as independent.
    r.bootstrapResamples = resamples;
    if (resamples > 0) {
        std::mt19937_64 rng(kBootstrapSeed);
        std::uniform_int_distribution<size_t> pick(0, n - 1);
        std::vector<double> klMeans(static_cast<size_t>(resamples)),
            sameMeans(static_cast<size_t>(resamples));
        for (int b = 0; b < resamples; ++b) {
            double k = 0;
            size_t t = 0;
            for (size_t i = 0; i < n; ++i) {
                const size_t j = pick(rng);
                k += s.kl[j];
                t += s.sameTop[j];
            }
            klMeans[size_t(b)] = k / double(n);
            sameMeans[size_t(b)] = double(t) / double(n);
        }
        std::sort(klMeans.begin(), klMeans.end());
        std::sort(sameMeans.begin(), sameMeans.end());
        r.klMeanInterval = {quantileOfSorted(klMeans, 0.025), quantileOfSorted(klMeans, 0.975)};
        r.sameTopInterval = {quantileOfSorted(sameMeans, 0.025),
                             quantileOfSorted(sameMeans, 0.975)};
    }
    return r;
}

nlohmann::json FidelityReport::toJson() const {
    return {{"positions", positions},
            {"reference_from_cache", referenceFromCache},
            {"perplexity_quantized", estimateJson(perplexityQuant)},
            {"perplexity_base", estimateJson(perplexityBase)},
            {"ln_ppl_correlation", lnPerplexityCorrelation},
            {"ln_ppl_ratio", estimateJson(lnPerplexityRatio)},
            {"ppl_ratio", estimateJson(perplexityRatio)},
            {"ppl_difference", estimateJson(perplexityDifference)},
            {"kl_mean", estimateJson(klMean)},
            {"kl_mean_bootstrap_95", {klMeanInterval.first, klMeanInterval.second}},
            {"kl_quantiles", quantilesJson(klQuantiles)},
            {"delta_p_mean", estimateJson(deltaPMean)},
            {"delta_p_quantiles", quantilesJson(deltaPQuantiles)},
            {"delta_p_rms", estimateJson(deltaPRms)},
            {"same_top", estimateJson(sameTop)},
            {"same_top_bootstrap_95", {sameTopInterval.first, sameTopInterval.second}},
            {"bootstrap_resamples", bootstrapResamples}};
}

std::string FidelityReport::toText() const {
    std::string out;
    char b[160];
    auto line = [&](const char* fmt, auto... v) {
        std::snprintf(b, sizeof b, fmt, v...);
        out += b;
    };
    line("====== Perplexity statistics (%lld positions) ======\n", (long long)positions);
    line("Mean PPL(Q)                   : %10.6f ± %10.6f\n", perplexityQuant.value,
         perplexityQuant.error);
    line("Mean PPL(base)                : %10.6f ± %10.6f%s\n", perplexityBase.value,
         perplexityBase.error, referenceFromCache ? "  (cached)" : "");
    line("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * lnPerplexityCorrelation);
    line("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", lnPerplexityRatio.value,
         lnPerplexityRatio.error);
    line("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", perplexityRatio.value,
         perplexityRatio.error);
    line("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", perplexityDifference.value,
         perplexityDifference.error);
    line("====== KL divergence statistics ======\n");
    line("Mean    KLD: %10.6f ± %10.6f  (bootstrap 95%%: %.6f .. %.6f)\n", klMean.value,
         klMean.error, klMeanInterval.first, klMeanInterval.second);
    for (const Quantile& q : klQuantiles)
        line("%s KLD: %10.6f\n", levelLabel(q.level).c_str(), q.value);
    line("====== Token probability statistics ======\n");
    line("Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * deltaPMean.value, 100.0 * deltaPMean.error);
    for (const Quantile& q : deltaPQuantiles)
        line("%s Δp: %6.3f%%\n", levelLabel(q.level).c_str(), 100.0 * q.value);
    line("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * deltaPRms.value, 100.0 * deltaPRms.error);
    line("Same top p: %6.3f ± %5.3f %%  (bootstrap 95%%: %.3f .. %.3f %%)\n", 100.0 * sameTop.value,
         100.0 * sameTop.error, 100.0 * sameTopInterval.first, 100.0 * sameTopInterval.second);
    return out;
}

} // namespace qs
