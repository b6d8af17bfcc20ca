#include "model/Rope.h"

#include "util/Error.h"

#include <algorithm>
#include <cmath>

namespace qs {

namespace {

// base^(-2i/dim) for i < dim/2, in float32 as transformers computes it.
at::Tensor defaultInverse(double base, int64_t dim) {
    return 1.0 / at::pow(base, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / double(dim));
}

at::Tensor llama3(const RopeParameters& r, at::Tensor inv) {
    // Long wavelengths divided by the factor, short ones kept, a smooth blend in between.
    const double oldLen = double(r.originalMaxPositions);
    const double lowWavelen = oldLen / r.lowFreqFactor;
    const double highWavelen = oldLen / r.highFreqFactor;
    const at::Tensor wavelen = 2.0 * M_PI / inv;
    const at::Tensor scaled = at::where(wavelen > lowWavelen, inv / r.factor, inv);
    const at::Tensor smooth =
        (oldLen / wavelen - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
    const at::Tensor medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
    return at::where(medium, smoothed, scaled);
}

double yarnMscale(double scale, double mscale) {
    return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

RotaryFrequencies yarn(const RopeParameters& r, int64_t dim) {
    RotaryFrequencies out;
    const double factor = r.factor;
    if (r.attentionFactor)
        out.attentionScaling = *r.attentionFactor;
    else if (r.mscale != 0 && r.mscaleAllDim != 0)
        out.attentionScaling = yarnMscale(factor, r.mscale) / yarnMscale(factor, r.mscaleAllDim);
    else
        out.attentionScaling = yarnMscale(factor, 1.0);
    const double base = r.theta;
    const double orig = double(r.originalMaxPositions);
    auto correctionDim = [&](double rotations) {
        return (double(dim) * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
    };
    double low = correctionDim(r.betaFast), high = correctionDim(r.betaSlow);
    if (r.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(dim - 1));
    if (low == high)
        high += 0.001; // transformers' guard against a zero-width ramp
    const at::Tensor posFreqs =
        at::pow(base, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / double(dim));
    const at::Tensor extrapolation = 1.0 / posFreqs;
    const at::Tensor interpolation = 1.0 / (factor * posFreqs);
    const at::Tensor ramp = at::clamp((at::arange(dim / 2, at::kFloat) - low) / (high - low), 0, 1);
    const at::Tensor extrapolationFactor = 1 - ramp;
    out.inverse = interpolation * (1 - extrapolationFactor) + extrapolation * extrapolationFactor;
    return out;
}

} // namespace

RotaryFrequencies rotaryFrequencies(const RopeParameters& r, int64_t headDim, int64_t maxPositions,
                                    int64_t seqLen, const std::string& source) {
    const int64_t dim = int64_t(double(headDim) * r.partialRotaryFactor);
    RotaryFrequencies out;
    if (r.type == "default") {
        out.inverse = defaultInverse(r.theta, dim);
    } else if (r.type == "linear") {
        out.inverse = defaultInverse(r.theta, dim) / r.factor;
    } else if (r.type == "llama3") {
        out.inverse = llama3(r, defaultInverse(r.theta, dim));
    } else if (r.type == "dynamic") {
        // NTK-aware: the base grows once the sequence outgrows max_position_embeddings.
        const double len = double(std::max(seqLen, maxPositions));
        const double base =
            r.theta * std::pow(r.factor * len / double(maxPositions) - (r.factor - 1),
                               double(dim) / double(dim - 2));
        out.inverse = defaultInverse(base, dim);
    } else if (r.type == "yarn") {
        out = yarn(r, dim);
    } else if (r.type == "longrope") {
        const std::vector<double>& ext =
            seqLen > r.originalMaxPositions ? r.longFactor : r.shortFactor;
        const at::Tensor factors = at::tensor(ext, at::kDouble).to(at::kFloat);
        out.inverse =
            1.0 / (factors *
                   at::pow(r.theta, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / double(dim)));
        if (r.attentionFactor)
            out.attentionScaling = *r.attentionFactor;
        else if (r.factor > 1.0)
            out.attentionScaling =
                std::sqrt(1 + std::log(r.factor) / std::log(double(r.originalMaxPositions)));
    } else {
        throw Error(source, "rope_parameters.rope_type", "unsupported type '" + r.type + "'");
    }
    return out;
}

namespace {

at::Tensor rotateHalf(const at::Tensor& x) {
    const int64_t half = x.size(-1) / 2;
    return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// GPT-J's rotate_every_two, Cohere's rotate_half
at::Tensor rotateEveryTwo(const at::Tensor& x) {
    const int64_t n = x.size(-1);
    const at::Tensor even = x.slice(-1, 0, n, 2), odd = x.slice(-1, 1, n, 2);
    return at::stack({-odd, even}, -1).flatten(-2);
}

} // namespace

at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       bool interleaved) {
    const int64_t rot = cos.size(-1);
    const at::Tensor r = rot == x.size(-1) ? x : x.narrow(-1, 0, rot);
    const at::Tensor out = r * cos + (interleaved ? rotateEveryTwo(r) : rotateHalf(r)) * sin;
    if (rot == x.size(-1))
        return out;
    return at::cat({out, x.narrow(-1, rot, x.size(-1) - rot)}, -1);
}

} // namespace qs
