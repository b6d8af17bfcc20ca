// `quantscope-cli recipe --auto`: the recipe search (run/SchemeSearch.h) from the command line.
#include "CliCommon.h"
#include "QuantOptions.h"

#include "io/JsonFields.h"
#include "model/Compute.h"
#include "recipe/RecipeLimits.h"
#include "run/SchemeSearch.h"
#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace qs::cli {

namespace {

double doubleOption(const QCommandLineParser& parser, const QString& name) {
    bool ok = false;
    const double v = parser.value(name).toDouble(&ok);
    if (!ok || !std::isfinite(v))
        throw UsageError{"--" + name.toStdString() + ": '" + parser.value(name).toStdString() +
                         "' is not a number"};
    return v;
}

// "fp8 x12, uint4_wo_128 x30": how many units each candidate takes at a point.
std::map<std::string, int> unitsPerCandidate(const SchemeSearchResult& r, const SearchPoint& p) {
    std::map<std::string, int> count;
    for (int c : p.choice)
        ++count[searchCandidateName(r.candidates, c)];
    return count;
}

// The frontier points a table shows: at most `rows` spread evenly by index, the chosen one
// always among them.
std::vector<size_t> shownPoints(const SchemeSearchResult& r, size_t rows) {
    std::vector<size_t> shown;
    const size_t n = r.frontier.size();
    for (size_t i = 0; i < std::min(rows, n); ++i)
        shown.push_back(rows >= n ? i : i * (n - 1) / (rows - 1));
    shown.push_back(r.chosen);
    std::sort(shown.begin(), shown.end());
    shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    return shown;
}

// The map from the sum of KL alone to the predicted KL, with the anchors it was fitted on
// (read back by --costs).
nlohmann::json predictionJson(const KlSumModel& model) {
    nlohmann::json anchors = nlohmann::json::array();
    for (const KlAnchor& a : model.anchors())
        anchors.push_back({{"candidate", a.candidate},
                           {"bits", a.bits},
                           {"kl_alone_sum", a.klSum},
                           {"kl_measured", a.klMeasured}});
    return {{"formula", "kl = kl_alone_sum / (1 + lambda * kl_alone_sum)"},
            {"lambda", model.lambda()},
            {"lambda_clamped", model.clamped()},
            {"anchors", anchors}};
}

// What the refinement's rounds did (null without --refine).
nlohmann::json refinementJson(const SchemeSearchResult& r) {
    if (!r.refinement)
        return nullptr;
    nlohmann::json rounds = nlohmann::json::array();
    for (const RefinementRound& round : r.refinement->rounds) {
        rounds.push_back(
            {{"kl_before", round.klBefore},
             {"evaluations", round.evaluations},
             {"units_changed", round.unitsChanged},
             {"predicted_kl", round.predictedKl},
             {"kl_after", round.klAfter ? nlohmann::json(*round.klAfter) : nlohmann::json(nullptr)},
             {"accepted", round.accepted},
             {"smaller_steps", round.smallerSteps}});
    }
    return {{"rounds", rounds},
            {"changed_pick", r.refined.has_value()},
            {"kl_measured_on_cost_windows", r.refinement->klMeasured},
            {"seconds", r.refineSeconds}};
}

nlohmann::json searchJson(const SchemeSearchResult& r, const SchemeSearchRequest& q,
                          const std::string& recipeFile) {
    const SearchPoint& chosen = r.pick();
    nlohmann::json frontier = nlohmann::json::array();
    for (const SearchPoint& p : r.frontier)
        frontier.push_back({{"bits", p.bits},
                            {"bytes", p.bytes},
                            {"predicted_kl", p.predictedKl},
                            {"kl_alone_sum", p.klSum},
                            {"units_per_candidate", unitsPerCandidate(r, p)}});
    nlohmann::json units = nlohmann::json::array();
    for (size_t u = 0; u < r.units.size(); ++u) {
        const SearchUnit& unit = r.units[u];
        nlohmann::json kl = nlohmann::json::object(), bytes = nlohmann::json::object(),
                       unfit = nlohmann::json::object();
        for (size_t c = 0; c < r.candidates.size(); ++c) {
            if (unit.bytes[c]) {
                kl[r.candidates[c]] = unit.kl[c];
                bytes[r.candidates[c]] = *unit.bytes[c];
            } else {
                unfit[r.candidates[c]] = unit.unfit[c];
            }
        }
        nlohmann::json entry = {{"unit", unit.name},
                                {"layers", unit.layers},
                                {"weights", unit.weights},
                                {"kl_alone", kl},
                                {"weight_bytes", bytes},
                                {"unfit", unfit},
                                {"chosen", searchCandidateName(r.candidates, chosen.choice[u])}};
        if (r.refined && r.frontier[r.chosen].choice[u] != chosen.choice[u])
            entry["frontier_pick"] =
                searchCandidateName(r.candidates, r.frontier[r.chosen].choice[u]);
        if (unit.measuredCandidate >= 0) {
            nlohmann::json local = nlohmann::json::object();
            for (size_t c = 0; c < r.candidates.size(); ++c)
                if (unit.bytes[c] && unit.localError[c] > 0.0)
                    local[r.candidates[c]] = unit.localError[c];
            entry["local_error"] = local;
            entry["kl_alone_measured_for"] = r.candidates[size_t(unit.measuredCandidate)];
        }
        units.push_back(entry);
    }
    nlohmann::json budget = nlohmann::json::object();
    if (q.budgetBits)
        budget["bits_per_weight"] = {{"asked", *q.budgetBits}, {"used", r.effectiveBits}};
    if (q.budgetBytes)
        budget["bytes"] = {{"asked", *q.budgetBytes}, {"used", r.modelBytes}};
    if (q.budgetKl)
        budget["kl_mean"] = {{"asked", *q.budgetKl}, {"predicted", chosen.predictedKl}};
    nlohmann::json j = {
        {"candidates", r.candidates},
        {"effective_bits", r.effectiveBits},
        {"model_bytes", r.modelBytes},
        {"budget", budget},
        {"predicted", {{"kl_mean", chosen.predictedKl}, {"kl_alone_sum", chosen.klSum}}},
        {"prediction", predictionJson(r.klModel)},
        {"frontier", frontier},
        {"frontier_exact", r.frontierExact},
        {"chosen_point", r.chosen},
        {"units", units},
        {"fp_perplexity",
         r.fpPerplexity ? nlohmann::json(*r.fpPerplexity) : nlohmann::json(nullptr)},
        {"seconds",
         {{"costs", r.costSeconds}, {"refine", r.refineSeconds}, {"measure", r.measureSeconds}}},
        {"refinement", refinementJson(r)},
        {"cost_windows", r.costWindows},
        {"unit_costs", unitCostsName(r.unitCosts)},
        {"unit_costs_measured_for",
         r.scaledFrom.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.scaledFrom)},
        {"costs_key", r.costsKey},
        {"costs_reused", r.costsReused},
        {"recipe", r.recipe.toJson()},
        {"recipe_file", recipeFile}};
    if (r.measuredPerplexity && r.measuredFidelity)
        j["measured"] = {{"kl_mean", r.measuredFidelity->klMean.value},
                         {"kl_mean_error", r.measuredFidelity->klMean.error},
                         {"same_top", r.measuredFidelity->sameTop.value},
                         {"perplexity", r.measuredPerplexity->perplexity},
                         {"fidelity", r.measuredFidelity->toJson()}};
    else
        j["measured"] = nullptr;
    return j;
}

void printSearch(const SchemeSearchResult& r, const SchemeSearchRequest& q,
                 const std::string& recipeFile) {
    const SearchPoint& chosen = r.pick();
    std::printf("candidates: ");
    for (size_t c = 0; c < r.candidates.size(); ++c)
        std::printf("%s%s", c ? ", " : "", r.candidates[c].c_str());
    std::printf("\nunits: %zu (linears that share a scheme grouped), %lld block linear weights\n",
                r.units.size(), static_cast<long long>(r.linearWeights));
    if (r.costsReused)
        std::printf("per-unit KL alone reused from --costs\n");
    else {
        std::string how;
        if (r.unitCosts == UnitCosts::Scaled)
            how = " (under " +
                  (r.scaledFrom.empty() ? "each unit's smallest candidate"
                                        : r.scaledFrom + " where a unit takes it") +
                  "; the others scaled by the unit's local output error)";
        std::printf("per-unit KL alone measured in %.1f s on %lld evaluation window(s)%s\n",
                    r.costSeconds, static_cast<long long>(r.costWindows), how.c_str());
    }
    std::printf("predicted KL = S / (1 + lambda S), S the sum of the units' KL alone; lambda "
                "%.4f%s, from each candidate everywhere:\n",
                r.klModel.lambda(), r.klModel.clamped() ? " (limited)" : "");
    for (const KlAnchor& a : r.klModel.anchors())
        std::printf("  %-24s %7.4f bits/wt: S %.6f, measured %.6f, predicted %.6f\n",
                    a.candidate.c_str(), a.bits, a.klSum, a.klMeasured, r.klModel.predict(a.klSum));
    std::printf("\n");
    std::printf("predicted frontier (%zu points%s; the table shows up to 16):\n", r.frontier.size(),
                r.frontierExact ? ", exact" : ", thinned");
    std::printf("  %10s %14s %14s  %s\n", "bits/wt", "model bytes", "predicted KL",
                "units per candidate");
    for (size_t i : shownPoints(r, 16)) {
        const SearchPoint& p = r.frontier[i];
        std::string mix;
        for (const auto& [name, n] : unitsPerCandidate(r, p))
            mix += (mix.empty() ? "" : ", ") + name + " x" + std::to_string(n);
        std::printf("%s %10.4f %14llu %14.6f  %s\n", i == r.chosen ? "->" : "  ", p.bits,
                    static_cast<unsigned long long>(p.bytes), p.predictedKl, mix.c_str());
    }
    if (r.refinement) {
        std::printf("\nrefinement in context (%.1f s, on the cost windows; each round measures "
                    "every unit's other candidates with the rest as picked):\n",
                    r.refineSeconds);
        for (size_t i = 0; i < r.refinement->rounds.size(); ++i) {
            const RefinementRound& round = r.refinement->rounds[i];
            std::printf("  round %zu: from KL %.6f, %d evaluations, ", i + 1, round.klBefore,
                        round.evaluations);
            if (!round.klAfter)
                std::printf("no better choice predicted (%.6f)\n", round.predictedKl);
            else
                std::printf("%d unit(s) changed%s: predicted %.6f, measured %.6f, %s\n",
                            round.unitsChanged,
                            round.smallerSteps ? (" (after " + std::to_string(round.smallerSteps) +
                                                  " smaller step(s): larger ones measured higher)")
                                                     .c_str()
                                               : "",
                            round.predictedKl, *round.klAfter,
                            round.accepted ? "kept" : "not lower: the earlier pick stays");
        }
    }
    std::printf("\nchosen recipe%s:\n",
                r.refined ? " (refined; the frontier's pick after ->)" : "");
    for (size_t u = 0; u < r.units.size(); ++u) {
        const int before = r.frontier[r.chosen].choice[u];
        std::printf(
            "  %-56s %s%s\n", r.units[u].name.c_str(),
            searchCandidateName(r.candidates, chosen.choice[u]).c_str(),
            before == chosen.choice[u]
                ? ""
                : ("   (frontier: " + searchCandidateName(r.candidates, before) + ")").c_str());
    }
    if (q.budgetBits)
        std::printf("\nbudget: %.4f bits per weight asked, %.4f used (effective_bits)\n",
                    *q.budgetBits, r.effectiveBits);
    else
        std::printf("\neffective_bits: %.4f\n", r.effectiveBits);
    if (q.budgetBytes)
        std::printf("budget: %llu bytes asked, %llu used (Quark hf_format tensors)\n",
                    static_cast<unsigned long long>(*q.budgetBytes),
                    static_cast<unsigned long long>(r.modelBytes));
    else
        std::printf("model bytes (Quark hf_format tensors): %llu\n",
                    static_cast<unsigned long long>(r.modelBytes));
    if (q.budgetKl)
        std::printf("budget: mean KL %.6f asked, %.6f predicted\n", *q.budgetKl,
                    chosen.predictedKl);
    if (r.measuredPerplexity && r.measuredFidelity) {
        const double measured = r.measuredFidelity->klMean.value;
        std::printf("mean KL: predicted %.6f, measured %.6f ± %.6f (%+.1f %% relative)\n",
                    chosen.predictedKl, measured, r.measuredFidelity->klMean.error,
                    measured > 0 ? 100.0 * (chosen.predictedKl - measured) / measured : 0.0);
        std::printf("same top token: %.2f %%; perplexity %.4f (full precision %.4f); measured "
                    "in %.1f s\n",
                    100.0 * r.measuredFidelity->sameTop.value, r.measuredPerplexity->perplexity,
                    r.fpPerplexity.value_or(0.0), r.measureSeconds);
    } else {
        std::printf("mean KL: predicted %.6f (not measured: --no-measure)\n", chosen.predictedKl);
    }
    if (!recipeFile.empty())
        std::printf("recipe written to %s\n", recipeFile.c_str());
}

} // namespace

int runRecipeSearch(const QStringList& args) {
    QCommandLineParser parser;
    parser.addOption({"auto", "Search the recipe (this mode)."});
    parser.addOption({"model", "The checkpoint folder.", "DIR"});
    parser.addOption({"candidates",
                      "Schemes a layer may take, comma-separated; 'none' leaves it "
                      "unquantized (default: none,fp8,uint4_wo_128,mxfp4_weight_only).",
                      "S1,S2,..."});
    parser.addOption({"budget-bpw",
                      "At most this effective_bits (bits per block linear weight as Quark "
                      "hf_format stores it: codes, scales, zero points).",
                      "B"});
    parser.addOption({"budget-bytes", "At most this many bytes of Quark hf_format tensors.", "N"});
    parser.addOption({"budget-kl",
                      "Predicted mean KL at most this: the smallest such recipe (with a size "
                      "budget too, it must also fit that).",
                      "K"});
    parser.addOption({"data", "Evaluation text the KL is measured on.", "TEXT"});
    parser.addOption({"no-measure", "Do not run the chosen recipe to measure it."});
    parser.addOption({"costs",
                      "Reuse the per-unit costs and anchors of an earlier search's --json output "
                      "on the same model, recipe and data (another budget needs no new "
                      "measurement).",
                      "JSON"});
    parser.addOption({"cost-windows",
                      "Measure the per-unit costs on the first N evaluation windows only (the "
                      "chosen recipe is measured on all): about N / (all) of the cost, from fewer "
                      "tokens.",
                      "N"});
    parser.addOption({"unit-costs",
                      "measured: each unit's KL alone under every candidate (default); scaled: "
                      "under one candidate only (the largest whose uniform recipe fits the size "
                      "budget, else the unit's smallest), the others scaled by the unit's local "
                      "output error (about a third of the evaluations with three candidates; the "
                      "costs then belong to this budget).",
                      "measured|scaled"});
    parser.addOption({"refine",
                      "Rounds of refinement in context after the frontier's pick (size budgets): "
                      "each measures every unit switched to each other candidate with the rest "
                      "as picked, on the cost windows, re-solves with those costs and keeps the "
                      "new pick only if it measures lower (0: none, the default).",
                      "N"});
    parser.addOption({"out", "Write the chosen recipe here.", "FILE"});
    parser.addOption({"json", "Machine-readable report."});
    addEvalWindowOptions(parser);
    addQuantOptions(parser);
    addRunOptions(parser);
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Designs a recipe: each layer's scheme from --candidates, minimising the "
                     "predicted mean KL divergence from the full-precision model within the size "
                     "budget (or the size within --budget-kl). Per-layer costs are each unit's "
                     "KL with only it quantized (one calibration per candidate, one evaluation "
                     "of the blocks from the unit's on per unit and candidate, on --data: keep "
                     "it small with --max-windows, default 8); the whole size/KL frontier is "
                     "solved exactly, then the chosen recipe is run and measured.",
                     schemeHelp()))
        return 0;
    if (!parser.isSet("model"))
        throw UsageError{"--auto needs --model DIR"};
    if (!parser.isSet("data"))
        throw UsageError{"--auto needs --data TEXT (the text the KL is measured on)"};
    for (const char* flag : {"quant-scheme", "layer-quant-scheme", "kv-cache-dtype"})
        if (parser.isSet(flag))
            throw UsageError{std::string("--") + flag +
                             ": the search chooses the schemes; list them with --candidates"};
    if (!parser.isSet("budget-bpw") && !parser.isSet("budget-bytes") && !parser.isSet("budget-kl"))
        throw UsageError{"give a budget: --budget-bpw B, --budget-bytes N or --budget-kl K"};
    if (parser.isSet("budget-bpw") && parser.isSet("budget-bytes"))
        throw UsageError{"give one size budget: --budget-bpw or --budget-bytes"};
    applyThreadsOption(parser);

    SchemeSearchRequest q;
    q.run.modelDir = modelFolder(parser.value("model")).toStdString();
    q.run.recipe = recipeFromOptions(parser);
    q.run.recipe.evaluation = evaluationFromOptions(parser, "data");
    if (!parser.isSet("max-windows"))
        q.run.recipe.evaluation.maxWindows = 8;
    q.run.device = parser.value("device").toStdString();
    q.run.dtype = parser.value("dtype").toStdString();
    try {
        parseComputeOptions(q.run.device, q.run.dtype);
        q.run.tokenizer = TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString());
    } catch (const Error& e) {
        throw UsageError{e.what()};
    }
    q.run.strict = parser.isSet("strict");
    for (const QString& value : parser.values("candidates"))
        for (const QString& c : value.split(',', Qt::SkipEmptyParts))
            q.candidates.push_back(c.trimmed().toStdString());
    if (parser.isSet("budget-bpw"))
        q.budgetBits = doubleOption(parser, "budget-bpw");
    if (parser.isSet("budget-bytes")) {
        bool ok = false;
        const qulonglong n = parser.value("budget-bytes").toULongLong(&ok);
        if (!ok)
            throw UsageError{"--budget-bytes: '" + parser.value("budget-bytes").toStdString() +
                             "' is not a byte count"};
        q.budgetBytes = uint64_t(n);
    }
    if (parser.isSet("budget-kl"))
        q.budgetKl = doubleOption(parser, "budget-kl");
    q.measure = !parser.isSet("no-measure");
    if (parser.isSet("cost-windows"))
        q.costWindows = intOption(parser, "cost-windows", 1, limits::evaluationMaxWindows.max);
    if (parser.isSet("unit-costs")) {
        const QString v = parser.value("unit-costs");
        if (v != "measured" && v != "scaled")
            throw UsageError{"--unit-costs: '" + v.toStdString() +
                             "' is not 'measured' or 'scaled'"};
        q.unitCosts = v == "scaled" ? UnitCosts::Scaled : UnitCosts::Measured;
    }
    if (parser.isSet("refine"))
        q.refineRounds = int(intOption(parser, "refine", 0, std::numeric_limits<int>::max()));
    if (parser.isSet("costs")) {
        const std::string path = parser.value("costs").toStdString();
        nlohmann::json earlier;
        try {
            earlier = nlohmann::json::parse(readTextFile(path));
            q.knownCostsKey = earlier.at("costs_key").get<std::string>();
            for (const nlohmann::json& unit : earlier.at("units"))
                for (const auto& [candidate, kl] : unit.at("kl_alone").items())
                    q.knownCosts[unit.at("unit").get<std::string>()][candidate] = kl.get<double>();
            if (earlier.contains("prediction"))
                for (const nlohmann::json& a : earlier.at("prediction").at("anchors"))
                    q.knownAnchors.push_back({a.at("candidate").get<std::string>(),
                                              a.at("kl_alone_sum").get<double>(),
                                              a.at("kl_measured").get<double>()});
        } catch (const nlohmann::json::exception& e) {
            throw Error(path, "costs_key / units / prediction",
                        std::string("not the --json output of a recipe search: ") + e.what());
        }
        if (q.knownCosts.empty())
            throw Error(path, "units", "no per-unit costs in it");
    }
    saveRecipeIfAsked(parser, q.run.recipe);

    const SchemeSearchResult result = runSchemeSearch(q, progressFor(parser, "recipe --auto"));
    printWarnings("recipe", result.warnings);
    const std::string out = parser.value("out").toStdString();
    if (!out.empty())
        result.recipe.save(out);
    if (parser.isSet("json"))
        printJson(searchJson(result, q, out));
    else
        printSearch(result, q, out);
    return 0;
}

} // namespace qs::cli
