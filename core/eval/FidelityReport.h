#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qs {

// What a quantized model does differently from its own full-precision self, token by token
// (docs/fidelity.md): the figures of llama.cpp's `llama-perplexity
// --kl-divergence` with its definitions, over the positions the perplexity protocol scores
// (tokens 1..L-1 of every window). Torch-free value types; eval/FidelityComparison.h fills the
// samples from the two models' logits.

// Per scored position, in window order.
struct FidelitySamples {
    std::vector<double> kl;       // KL(full precision || quantized) over the whole vocabulary
    std::vector<double> deltaP;   // p_quantized(target) - p_full(target)
    std::vector<double> nllBase;  // -log p_full(target)
    std::vector<double> nllQuant; // -log p_quantized(target)
    std::vector<uint8_t> sameTop; // 1 where both argmax tokens are the same

    size_t size() const { return kl.size(); }
    void append(const FidelitySamples& more);
};

// A mean and its standard error, as llama.cpp states them ("value ± error").
struct Estimate {
    double value = 0.0;
    double error = 0.0;
};

// A quantile of the sorted samples: `level` in [0, 1] (0 the minimum, 1 the maximum).
struct Quantile {
    double level = 0.0;
    double value = 0.0;
};

struct FidelityReport {
    int64_t positions = 0;
    // Perplexity statistics.
    Estimate perplexityQuant, perplexityBase;
    double lnPerplexityCorrelation = 0.0; // Cor(ln PPL(Q), ln PPL(base)) over positions
    Estimate lnPerplexityRatio;           // mean ln(PPL(Q)/PPL(base))
    Estimate perplexityRatio, perplexityDifference;
    // KL divergence statistics.
    Estimate klMean;
    std::vector<Quantile> klQuantiles; // max, 99.9, 99, 95, 90 %, median, 10, 5, 1, 0.1 %, min
    // Token probability statistics.
    Estimate deltaPMean;
    std::vector<Quantile> deltaPQuantiles; // the KL levels plus 75 % and 25 %
    Estimate deltaPRms;
    Estimate sameTop; // share of positions whose top-1 token is the same
    // Percentile bootstrap (positions resampled with replacement) 95 % intervals.
    std::pair<double, double> klMeanInterval{0.0, 0.0};
    std::pair<double, double> sameTopInterval{0.0, 0.0};
    int bootstrapResamples = 0;
    bool referenceFromCache = false; // the full-precision side was read from the cache

    nlohmann::json toJson() const;
    // The llama.cpp-style text block ("====== KL divergence statistics ======" ...).
    std::string toText() const;
};

// Resamples of the bootstrap and the seed of its generator (fixed: the same samples give the
// same interval).
constexpr int kBootstrapResamples = 1000;
constexpr uint64_t kBootstrapSeed = 20240527;

// The report of `samples` (at least one position). The definitions are llama.cpp's
// (tools/perplexity/perplexity.cpp): means with error sqrt((E[x^2] - E[x]^2) / (n - 1)) (0 for
// n <= 10), quantiles by linear interpolation between sorted samples, the error of a share p
// sqrt(p (1 - p) / (n - 1)), RMS Δp's error 0.5 / rms × the error of mean Δp².
FidelityReport summarizeFidelity(const FidelitySamples& samples,
                                 int resamples = kBootstrapResamples);

// Mean KL and share of equal top-1 tokens alone: what a per-layer row reports.
struct FidelitySummary {
    double klMean = 0.0;
    double sameTop = 0.0;
};
FidelitySummary summarizeBriefly(const FidelitySamples& samples);

} // namespace qs
