#include "model/RopeConfig.h"

#include "io/JsonFields.h"
#include "util/Error.h"

#include <set>

namespace qs {

namespace {

const std::set<std::string>& fieldsOf(const std::string& type) {
    static const std::set<std::string> none;
    static const std::set<std::string> linear{"factor"};
    static const std::set<std::string> llama3{"factor", "low_freq_factor", "high_freq_factor",
                                              "original_max_position_embeddings"};
    static const std::set<std::string> yarn{"factor",    "original_max_position_embeddings",
                                            "beta_fast", "beta_slow",
                                            "mscale",    "mscale_all_dim",
                                            "truncate",  "attention_factor"};
    static const std::set<std::string> longrope{"factor", "original_max_position_embeddings",
                                                "short_factor", "long_factor", "attention_factor"};
    if (type == "linear" || type == "dynamic")
        return linear;
    if (type == "llama3")
        return llama3;
    if (type == "yarn")
        return yarn;
    if (type == "longrope")
        return longrope;
    return none;
}

std::vector<double> factorList(const nlohmann::json& j, const std::string& source,
                               const std::string& field, size_t expected) {
    if (!j.is_array() || j.size() != expected)
        throw Error(source, field,
                    "expected a list of " + std::to_string(expected) +
                        " numbers (one per rotary frequency)");
    std::vector<double> out;
    for (const nlohmann::json& v : j) {
        if (!v.is_number() || v.get<double>() <= 0)
            throw Error(source, field, "expected positive numbers, got " + v.dump());
        out.push_back(v.get<double>());
    }
    return out;
}

// One rope object; `prefix` names it in errors ("rope_parameters", "rope_scaling",
// "rope_parameters.sliding_attention"). `theta` is the fallback when the object has none
// (transformers 4 keeps it at the top level).
RopeParameters parseRopeObject(const nlohmann::json& j, const std::string& source,
                               const std::string& prefix, double theta, const ModelConfig& c,
                               int64_t original) {
    if (!j.is_object())
        throw Error(source, prefix, "expected an object");
    RopeParameters r;
    try {
        const JsonFields f(j, source);
        if (f.has("rope_type"))
            r.type = f.requiredString("rope_type");
        else
            r.type = f.optionalString("type", "default");
        if (r.type == "su")
            r.type = "longrope"; // Phi-3's first name for it
        static const std::set<std::string> supported{"default", "linear", "dynamic",
                                                     "yarn",    "llama3", "longrope"};
        if (!supported.count(r.type))
            throw Error(source, "rope_type",
                        "unsupported rope type '" + r.type +
                            "' (supported: default, linear, dynamic, yarn, llama3, longrope)");
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string& k = it.key();
            if (k == "rope_type" || k == "type" || k == "rope_theta" ||
                k == "partial_rotary_factor" || fieldsOf(r.type).count(k))
                continue;
            throw Error(source, k,
                        "not understood for rope type '" + r.type +
                            "' (it would change the positions; refusing rather than ignoring "
                            "it)");
        }
        r.theta = f.optionalDouble("rope_theta", theta, 1e-6, 1e15);
        r.partialRotaryFactor = f.optionalDouble("partial_rotary_factor", 1.0, 1e-6, 1.0);
        r.originalMaxPositions =
            f.optionalInt("original_max_position_embeddings", original, 1, int64_t(1) << 40);
        if (r.type == "linear" || r.type == "dynamic" || r.type == "llama3")
            r.factor = f.requiredDouble("factor", 1e-6, 1e6);
        if (r.type == "llama3") {
            r.lowFreqFactor = f.requiredDouble("low_freq_factor", 1e-6, 1e6);
            r.highFreqFactor = f.requiredDouble("high_freq_factor", 1e-6, 1e6);
            r.originalMaxPositions =
                f.requiredInt("original_max_position_embeddings", 1, int64_t(1) << 40);
            if (r.highFreqFactor <= r.lowFreqFactor)
                throw Error(source, "high_freq_factor", "must exceed low_freq_factor");
        }
        if (r.type == "yarn") {
            // transformers 5: factor missing means max_position_embeddings / original
            r.factor = f.has("factor") ? f.requiredDouble("factor", 1e-6, 1e6)
                                       : double(c.maxPositions) / double(r.originalMaxPositions);
            r.betaFast = f.has("beta_fast") ? f.requiredDouble("beta_fast", 1e-6, 1e6) : 32.0;
            r.betaSlow = f.has("beta_slow") ? f.requiredDouble("beta_slow", 1e-6, 1e6) : 1.0;
            r.mscale = f.optionalDouble("mscale", 0.0, 0.0, 1e6);
            r.mscaleAllDim = f.optionalDouble("mscale_all_dim", 0.0, 0.0, 1e6);
            r.truncate = f.optionalBool("truncate", true);
        }
        if (r.type == "yarn" || r.type == "longrope")
            if (f.has("attention_factor"))
                r.attentionFactor = f.requiredDouble("attention_factor", 1e-6, 1e6);
        if (r.type == "longrope") {
            const size_t n = size_t(c.headDim * r.partialRotaryFactor) / 2;
            r.shortFactor = factorList(f.object().at("short_factor"), source, "short_factor", n);
            r.longFactor = factorList(f.object().at("long_factor"), source, "long_factor", n);
            r.factor = f.has("factor") ? f.requiredDouble("factor", 1e-6, 1e6)
                                       : double(c.maxPositions) / double(r.originalMaxPositions);
        }
    } catch (const Error& e) {
        if (e.source() != source || e.field().empty())
            throw;
        throw Error(source, prefix + "." + e.field(), e.reason());
    } catch (const nlohmann::json::out_of_range&) {
        throw Error(source, prefix, "a field the rope type '" + r.type + "' needs is missing");
    }
    return r;
}

} // namespace

void parseRope(const JsonFields& f, ModelConfig& c) {
    const std::string& src = f.source();
    const double topTheta = f.optionalDouble("rope_theta", 10000.0, 1e-6, 1e15);
    // Phi-3 keeps the pretraining length at the top level
    const int64_t original =
        f.optionalInt("original_max_position_embeddings", c.maxPositions, 1, int64_t(1) << 40);
    if (f.has("rope_parameters")) {
        const nlohmann::json& rp = f.object().at("rope_parameters");
        if (f.has("rope_scaling"))
            throw Error(src, "rope_scaling",
                        "both rope_parameters and rope_scaling given; which one applies is "
                        "ambiguous");
        const bool perLayerType =
            rp.is_object() && (rp.contains("full_attention") || rp.contains("sliding_attention"));
        if (!perLayerType) {
            c.rope = parseRopeObject(rp, src, "rope_parameters", topTheta, c, original);
            return;
        }
        for (auto it = rp.begin(); it != rp.end(); ++it)
            if (it.key() != "full_attention" && it.key() != "sliding_attention")
                throw Error(src, "rope_parameters." + it.key(),
                            "unknown layer type (expected full_attention, sliding_attention)");
        if (!rp.contains("full_attention"))
            throw Error(src, "rope_parameters.full_attention", "missing");
        c.rope = parseRopeObject(rp.at("full_attention"), src, "rope_parameters.full_attention",
                                 topTheta, c, original);
        if (rp.contains("sliding_attention"))
            c.slidingRope =
                parseRopeObject(rp.at("sliding_attention"), src,
                                "rope_parameters.sliding_attention", topTheta, c, original);
        return;
    }
    if (f.has("rope_scaling"))
        c.rope = parseRopeObject(f.object().at("rope_scaling"), src, "rope_scaling", topTheta, c,
                                 original);
    else
        c.rope.theta = topTheta;
    // transformers 4 kept the rotating fraction at the top level (Phi, StableLM style)
    if (f.has("partial_rotary_factor"))
        c.rope.partialRotaryFactor = f.requiredDouble("partial_rotary_factor", 1e-6, 1.0);
}

} // namespace qs
