#include "run/SchemeSearch.h"

#include "export/ExportSize.h"
#include "export/QuarkHfExporter.h"
#include "model/ModelFamily.h"
#include "model/ModelLoader.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "recipe/Provenance.h"
#include "recipe/SchemeFrontier.h"
#include "run/PlanRowEvaluator.h"
#include "run/PreparedRun.h"
#include "run/Run.h"
#include "run/SchemeRefinement.h"
#include "util/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace qs {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fixed(double v, int digits) {
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

// The budget flag a message names.
std::string budgetFlag(const SchemeSearchRequest& r) {
    if (r.budgetBits)
        return "--budget-bpw";
    if (r.budgetBytes)
        return "--budget-bytes";
    return "--budget-kl";
}

void checkRequest(const SchemeSearchRequest& r) {
    if (r.budgetBits && r.budgetBytes)
        throw Error("--budget-bpw", "", "give one size budget: --budget-bpw or --budget-bytes");
    if (!r.budgetBits && !r.budgetBytes && !r.budgetKl)
        throw Error("--budget-bpw", "",
                    "give a budget: --budget-bpw (bits per weight), --budget-bytes (model "
                    "bytes) or --budget-kl (mean KL)");
    if (r.budgetBits && !(*r.budgetBits > 0.0 && std::isfinite(*r.budgetBits)))
        throw Error("--budget-bpw", fixed(*r.budgetBits, 4), "must be a positive number");
    if (r.costWindows < 0)
        throw Error("--cost-windows", std::to_string(r.costWindows),
                    "must be a number of windows (0: all)");
    if (r.refineRounds < 0)
        throw Error("--refine", std::to_string(r.refineRounds),
                    "must be a number of rounds (0: none)");
    if (r.refineRounds > 0 && r.budgetKl)
        throw Error("--refine", std::to_string(r.refineRounds),
                    "refines the pick within a size budget (--budget-bpw or --budget-bytes), not "
                    "a KL budget");
    if (r.budgetKl && !(*r.budgetKl >= 0.0 && std::isfinite(*r.budgetKl)))
        throw Error("--budget-kl", fixed(*r.budgetKl, 6), "must be a number >= 0");
    const Recipe& base = r.run.recipe;
    if (base.global || !base.layerOverrides.empty() || !base.layerTypeOverrides.empty())
        throw Error("recipe", "global",
                    "the search chooses every layer's scheme: the base recipe must name none "
                    "(its exclusions, algorithms, calibration and evaluation are kept)");
    if (base.kvCache)
        throw Error("recipe", "kv_cache",
                    "KV-cache quantization belongs to no one layer and the search does not "
                    "weigh it; add it to the recipe the search writes");
    if (base.evaluation.dataPath.empty())
        throw Error("recipe", "evaluation.data",
                    "the search measures KL divergence on evaluation text: give a text file "
                    "(--data FILE)");
}

// Scaled unit costs depend on the size budget (it picks the candidate measured): part of the key.
std::string scaledBudgetTag(const SchemeSearchRequest& r) {
    if (r.budgetBytes)
        return "-B" + std::to_string(*r.budgetBytes);
    return r.budgetBits ? "-b" + fixed(*r.budgetBits, 6) : std::string();
}

} // namespace

std::string costsKey(const SchemeSearchRequest& request) {
    Recipe base = request.run.recipe;
    base.provenance = {};
    return recipeHash(base).substr(0, 16) + "-" +
           modelHeadersHash(request.run.modelDir).substr(0, 16) + "-" + request.run.device + "-" +
           request.run.dtype +
           (request.costWindows > 0 ? "-w" + std::to_string(request.costWindows) : "") +
           (request.unitCosts == UnitCosts::Scaled ? "-scaled" + scaledBudgetTag(request) : "");
}

const char* unitCostsName(UnitCosts costs) {
    return costs == UnitCosts::Scaled ? "scaled" : "measured";
}

const std::vector<std::string>& defaultSearchCandidates() {
    static const std::vector<std::string> ladder{kUnquantizedCandidate, "fp8", "uint4_wo_128",
                                                 "mxfp4_weight_only"};
    return ladder;
}

SchemeSearchResult
runSchemeSearch(const SchemeSearchRequest& request,
                const std::function<bool(double, const std::string&)>& progress) {
    const Clock::time_point started = Clock::now();
    checkRequest(request);
    SchemeSearchResult result;
    const Recipe& base = request.run.recipe;
    base.validate("recipe");
    result.candidates = request.candidates.empty() ? defaultSearchCandidates() : request.candidates;
    const std::vector<std::string>& candidates = result.candidates;
    std::vector<std::optional<quant::QuantScheme>> schemes;
    std::set<std::string> seen;
    bool quantizing = false;
    for (const std::string& c : candidates) {
        if (!seen.insert(c).second)
            throw Error("--candidates", c, "listed twice");
        if (c == kUnquantizedCandidate) {
            schemes.emplace_back();
            continue;
        }
        try {
            schemes.push_back(quant::resolveScheme(c));
        } catch (const Error& e) {
            throw Error("--candidates", c, e.reason());
        }
        quantizing = true;
    }
    if (!quantizing)
        throw Error("--candidates", "",
                    "no candidate quantizes: give at least one scheme besides 'none'");
    const size_t k = candidates.size();
    const bool noneListed = seen.count(kUnquantizedCandidate) > 0;

    // Sizes, from the headers: every candidate as the global scheme (unfit layers skipped, so
    // the report says which), and nothing quantized (the float bytes of each linear).
    const ModelHandle handle = openModelHandle(request.run.modelDir);
    result.units = buildSearchUnits(handle, base);
    if (result.units.empty())
        throw Error("recipe", "exclude", "every block linear is excluded: nothing to search");
    auto sizeOf = [&](const std::optional<quant::QuantScheme>& scheme, const std::string& name) {
        Recipe r = base;
        r.global = scheme;
        r.unfitPolicy = "skip";
        const ExportSizeReport report = exportSize(request.run.modelDir, r, {"quark"});
        const FormatSize* quark = report.format("quark");
        if (!quark->holds())
            throw Error("--candidates", name,
                        "the Quark hf_format export cannot store it: " + quark->problems.front());
        return report;
    };
    const ExportSizeReport unquantized = sizeOf(std::nullopt, kUnquantizedCandidate);
    std::map<std::string, const LinearSize*> floatLinear;
    for (const LinearSize& l : unquantized.linears)
        floatLinear[l.name] = &l;
    std::set<std::string> unitLinears;
    for (SearchUnit& u : result.units) {
        u.bytes.assign(k, std::nullopt);
        u.kl.assign(k, 0.0);
        u.unfit.assign(k, "");
        u.activationBytes.assign(k, 0);
        for (const std::string& l : u.layers) {
            u.weights += floatLinear.at(l)->elements();
            unitLinears.insert(l);
        }
    }
    result.linearWeights = unquantized.linearWeights;
    uint64_t excludedLinearBytes = 0;
    for (const LinearSize& l : unquantized.linears)
        if (!unitLinears.count(l.name))
            excludedLinearBytes += l.storedBytes.at("quark");
    for (size_t c = 0; c < k; ++c) {
        const ExportSizeReport report =
            schemes[c] ? sizeOf(schemes[c], candidates[c]) : unquantized;
        std::map<std::string, const LinearSize*> linear;
        uint64_t unitBytes = 0;
        for (const LinearSize& l : report.linears) {
            linear[l.name] = &l;
            if (unitLinears.count(l.name))
                unitBytes += l.storedBytes.at("quark");
        }
        // A static quantizer's scales belong to its layer: part of the unit's model bytes.
        std::map<std::string, uint64_t> activationBytes;
        for (const StoredTensor& t : report.format("quark")->tensors)
            if (t.role == StoredRole::ActivationScale && unitLinears.count(t.layer)) {
                activationBytes[t.layer] += t.bytes;
                unitBytes += t.bytes;
            }
        result.fixedBytes =
            std::max(result.fixedBytes, report.format("quark")->modelBytes - unitBytes);
        for (SearchUnit& u : result.units) {
            uint64_t bytes = 0;
            for (const std::string& l : u.layers) {
                const LinearSize& s = *linear.at(l);
                if (schemes[c] && !s.scheme && u.unfit[c].empty())
                    u.unfit[c] = l + ": " + s.note;
                // The recipe must load where Quark's exports load (transformers + amd-quark):
                // a layout its loaders refuse is no option.
                if (s.scheme && u.unfit[c].empty())
                    if (const std::string why =
                            QuarkHfExporter::unfitReason(*s.scheme, s.shape, true);
                        !why.empty())
                        u.unfit[c] = l + ": the Quark hf_format loaders refuse it: " + why;
                bytes += s.storedBytes.at("quark");
                u.activationBytes[c] += activationBytes[l];
            }
            if (u.unfit[c].empty())
                u.bytes[c] = bytes;
        }
    }

    // Costs: one calibration per quantizing candidate, one full-precision pass, one measurement
    // per unit and candidate, and one of each candidate's uniform recipe (the anchors).
    const size_t quantizingCount = size_t(
        std::count_if(schemes.begin(), schemes.end(), [](const auto& s) { return bool(s); }));
    auto floatBytes = [&floatLinear](const SearchUnit& unit) {
        uint64_t bytes = 0;
        for (const std::string& l : unit.layers)
            bytes += floatLinear.at(l)->storedBytes.at("quark");
        return bytes;
    };
    const bool reuse = !request.knownCosts.empty();
    const bool scaled = request.unitCosts == UnitCosts::Scaled;
    result.unitCosts = request.unitCosts;
    // A candidate's uniform recipe (every unit that fits it quantized by it, the others in
    // float): its weight bytes (what effective_bits counts) and its model bytes.
    auto uniformBytes = [&](size_t c) {
        std::pair<uint64_t, uint64_t> bytes{excludedLinearBytes, result.fixedBytes};
        for (const SearchUnit& u : result.units) {
            const uint64_t w = u.bytes[c] ? *u.bytes[c] : floatBytes(u);
            bytes.first += w;
            bytes.second += w + (u.bytes[c] ? u.activationBytes[c] : 0);
        }
        return bytes;
    };
    // Scaled: each unit's KL alone measured under one candidate only: the one whose uniform
    // recipe is the largest within the size budget (the candidate most units take near it, so
    // the costs that decide the pick are measured), or the unit's smallest fitting candidate
    // where it cannot take that one or no uniform recipe fits (or the budget is a KL).
    std::optional<size_t> reference;
    uint64_t referenceBytes = 0;
    for (size_t c = 0; c < k && scaled && (request.budgetBits || request.budgetBytes); ++c) {
        if (!schemes[c])
            continue;
        const auto [weightBytes, modelBytes] = uniformBytes(c);
        // Within the budget as the solver reads it: effective_bits <= B in whole bytes.
        const bool fits =
            request.budgetBytes
                ? modelBytes <= *request.budgetBytes
                : (long double)weightBytes <= std::floor((long double)*request.budgetBits *
                                                         (long double)result.linearWeights / 8.0L);
        const uint64_t size = request.budgetBytes ? modelBytes : weightBytes;
        if (fits && (!reference || size > referenceBytes)) {
            reference = c;
            referenceBytes = size;
        }
    }
    if (reference)
        result.scaledFrom = candidates[*reference];
    // The unit evaluations: every fitting (unit, quantizing candidate), or one per unit scaled.
    size_t measuredUnits = 0;
    for (SearchUnit& u : result.units) {
        u.localError.assign(k, 0.0);
        for (size_t c = 0; c < k; ++c) {
            if (!schemes[c] || !u.bytes[c])
                continue;
            if (!scaled)
                ++measuredUnits;
            else if (u.measuredCandidate < 0 || *u.bytes[c] < *u.bytes[size_t(u.measuredCandidate)])
                u.measuredCandidate = int(c);
        }
        if (reference && u.bytes[*reference])
            u.measuredCandidate = int(*reference);
        if (u.measuredCandidate >= 0)
            ++measuredUnits;
    }
    // Per quantizing candidate: its calibration, its local errors (scaled), its anchor.
    const bool refine = request.refineRounds > 0;
    const double steps =
        double((reuse ? 0 : quantizingCount * (scaled ? 3 : 2) + measuredUnits + 1) +
               (refine ? (reuse ? quantizingCount + 1 : 0) + quantizingCount : 0) +
               (request.measure ? 1 : 0));
    std::vector<KlAnchor> anchors;
    double done = 0;
    auto part = [&](const std::string& what) -> PipelineProgress {
        return [&, what](double f, const std::string& m) {
            return !progress || progress(std::min(1.0, (done + f) / steps), what + ": " + m);
        };
    };
    RunRequest costRun = request.run;
    costRun.evaluate = true;
    costRun.analyze = false;
    costRun.sensitivity = false;
    costRun.outDir.clear();
    costRun.exportFormats.clear();
    result.costsKey = costsKey(request);
    result.costsReused = reuse;
    result.costWindows = request.costWindows; // the windows counted once measured
    if (result.costsReused) {
        if (request.knownCostsKey != result.costsKey)
            throw Error("--costs", request.knownCostsKey,
                        "these costs were measured on another model, recipe, device, dtype, "
                        "number of cost windows or kind of unit costs, or (scaled unit costs) "
                        "another size budget (this search's key is " +
                            result.costsKey + ")");
        for (SearchUnit& u : result.units)
            for (size_t c = 0; c < k; ++c) {
                if (!schemes[c] || !u.bytes[c])
                    continue;
                const auto unit = request.knownCosts.find(u.name);
                const bool known =
                    unit != request.knownCosts.end() && unit->second.count(candidates[c]) > 0;
                if (!known)
                    throw Error("--costs", u.name,
                                "no cost for candidate '" + candidates[c] +
                                    "': measure it (run the search without --costs)");
                u.kl[c] = unit->second.at(candidates[c]);
            }
        for (size_t c = 0; c < k; ++c) {
            if (!schemes[c])
                continue;
            const auto known =
                std::find_if(request.knownAnchors.begin(), request.knownAnchors.end(),
                             [&](const KlAnchor& a) { return a.candidate == candidates[c]; });
            if (known == request.knownAnchors.end())
                throw Error("--costs", candidates[c],
                            "no measured uniform recipe for this candidate (prediction.anchors): "
                            "measure it (run the search without --costs)");
            anchors.push_back(*known);
        }
    }
    bool costsOnFewerWindows = false;
    std::optional<PreparedRun> referencePrep; // owns the model the reference logits come from
    std::optional<PlanRowEvaluator> rows;
    // A candidate's costs on its calibrated plans: the units' local errors (scaled), their KL
    // alone, and its anchor.
    auto measureCosts = [&](size_t c, CalibrationPipeline& pipeline,
                            std::vector<std::vector<LayerPlan>>& plans) {
        if (scaled) {
            std::map<int, std::set<std::string>> perBlock;
            for (const SearchUnit& u : result.units)
                if (u.bytes[c])
                    perBlock[u.block].insert(u.layers.begin(), u.layers.end());
            std::map<std::string, double> energy;
            for (const auto& [block, layers] : perBlock)
                energy.merge(rows->localErrorEnergy(plans, block, layers));
            for (SearchUnit& u : result.units)
                for (const std::string& l : u.layers)
                    u.localError[c] += u.bytes[c] && energy.count(l) ? energy.at(l) : 0.0;
            ++done;
        }
        for (SearchUnit& u : result.units) {
            if (!u.bytes[c] || (scaled && u.measuredCandidate != int(c)))
                continue;
            u.kl[c] = rows->measure(pipeline, plans,
                                    onlyLayersQuantized({u.layers.begin(), u.layers.end()}),
                                    rows->referenceInput(u.block), u.block, nullptr,
                                    part(candidates[c] + " " + u.name))
                          .fidelity.klMean;
            ++done;
        }
        // The anchor: every unit that fits the candidate quantized by it, from block 0 (its
        // sum of KL alone is added once every cost is known, below).
        KlAnchor anchor{candidates[c], 0.0, 0.0};
        std::set<std::string> fitting;
        for (const SearchUnit& u : result.units)
            if (u.bytes[c])
                fitting.insert(u.layers.begin(), u.layers.end());
        anchor.klMeasured =
            rows->measure(pipeline, plans, onlyLayersQuantized(std::move(fitting)),
                          rows->referenceInput(0), 0, nullptr, part(candidates[c] + " everywhere"))
                .fidelity.klMean;
        anchors.push_back(anchor);
        ++done;
    };
    // The refinement measures mixed recipes: every candidate's calibrated plans are kept (with
    // costs reused, the candidates are calibrated for it alone).
    std::vector<std::vector<std::vector<LayerPlan>>> plansOf(k);
    for (size_t c = 0; c < k && (!result.costsReused || refine); ++c) {
        if (!schemes[c])
            continue;
        costRun.recipe = base;
        costRun.recipe.global = schemes[c];
        costRun.recipe.unfitPolicy = "skip";
        PreparedRun prep = prepareRun(costRun);
        for (const auto& t : prep.transforms)
            if (t->modelTransform(prep.handle.config))
                throw Error("recipe", "algorithms",
                            "'" + t->name() +
                                "' transforms the whole model; the search measures every "
                                "candidate against one full-precision pass and cannot include it");
        result.warnings.insert(result.warnings.end(), prep.warnings.begin(), prep.warnings.end());
        const PipelineOptions options = planKeepingOptions(prep);
        CalibrationPipeline pipeline(*prep.model, *prep.planner, options);
        std::vector<std::vector<LayerPlan>> plans =
            pipeline.run(prep.calibration, {}, part(candidates[c] + " calibration")).plans;
        ++done;
        if (!rows) {
            const int64_t windows = prep.evaluation.size(0);
            result.costWindows =
                request.costWindows > 0 ? std::min(request.costWindows, windows) : windows;
            costsOnFewerWindows = result.costWindows < windows;
            rows.emplace(*prep.model, prep.evaluation.narrow(0, 0, result.costWindows),
                         options.maxBatchTokens);
            result.fpPerplexity =
                rows->measureReference(pipeline, plans, part("full precision")).perplexity;
            ++done;
        }
        if (!result.costsReused)
            measureCosts(c, pipeline, plans);
        if (refine)
            plansOf[c] = std::move(plans);
        if (!referencePrep)
            referencePrep.emplace(std::move(prep));
    }
    if (!refine) {
        rows.reset();
        referencePrep.reset();
    }
    if (!result.costsReused) {
        // Scaled: the other candidates' KL alone from the measured one by the local errors'
        // ratio (a unit whose measured candidate changes nothing locally keeps its KL).
        for (SearchUnit& u : result.units)
            for (size_t c = 0; c < k && scaled && u.measuredCandidate >= 0; ++c) {
                const size_t m = size_t(u.measuredCandidate);
                if (c != m && schemes[c] && u.bytes[c])
                    u.kl[c] = u.localError[m] > 0.0 ? u.kl[m] * u.localError[c] / u.localError[m]
                                                    : u.kl[m];
            }
        for (KlAnchor& a : anchors) {
            const size_t c = size_t(std::find(candidates.begin(), candidates.end(), a.candidate) -
                                    candidates.begin());
            for (const SearchUnit& u : result.units)
                if (u.bytes[c])
                    a.klSum += u.kl[c];
        }
    }
    result.costSeconds = secondsSince(started);

    // The frontier. A unit no listed candidate fits stays unquantized (said once).
    // The size the solver adds: weight bytes (what effective_bits counts), or with a byte
    // budget the unit's whole model bytes (weights and activation scales).
    const bool modelBytesBudget = bool(request.budgetBytes);
    FrontierUnits options(result.units.size());
    for (size_t u = 0; u < result.units.size(); ++u) {
        SearchUnit& unit = result.units[u];
        for (size_t c = 0; c < k; ++c)
            options[u].push_back(
                unit.bytes[c]
                    ? std::optional<FrontierOption>(FrontierOption{
                          *unit.bytes[c] + (modelBytesBudget ? unit.activationBytes[c] : 0),
                          unit.kl[c]})
                    : std::nullopt);
        if (!noneListed) {
            bool any = false;
            for (const auto& o : options[u])
                any = any || bool(o);
            std::optional<FrontierOption> fallback;
            if (!any) {
                fallback = FrontierOption{floatBytes(unit), 0.0};
                result.warnings.push_back(unit.name + ": no candidate fits (" + unit.unfit[0] +
                                          "); left unquantized");
            }
            options[u].push_back(fallback);
        }
    }
    const Frontier frontier = paretoFrontier(options);
    result.frontierExact = frontier.exact;
    for (KlAnchor& a : anchors) {
        const size_t c = size_t(std::find(candidates.begin(), candidates.end(), a.candidate) -
                                candidates.begin());
        a.bits = 8.0 * double(uniformBytes(c).first) / double(result.linearWeights);
    }
    result.klModel = KlSumModel(anchors, frontier.points.front().cost);
    if (result.klModel.clamped())
        result.warnings.push_back(
            "the uniform recipes' KL grows much faster than the sum of the units' KL alone; the "
            "prediction's correction was limited to twice the sum (lambda " +
            fixed(result.klModel.lambda(), 4) + ")");
    // A choice's sizes and sum of KL alone.
    auto pointFor = [&](const std::vector<int>& choice) {
        SearchPoint point;
        point.bytes = result.fixedBytes;
        point.choice = choice;
        uint64_t weightBytes = excludedLinearBytes;
        for (size_t u = 0; u < result.units.size(); ++u) {
            const size_t c = size_t(choice[u]);
            const uint64_t w = c < k ? *result.units[u].bytes[c] : floatBytes(result.units[u]);
            weightBytes += w;
            point.bytes += w + (c < k ? result.units[u].activationBytes[c] : 0);
            point.klSum += c < k ? result.units[u].kl[c] : 0.0;
        }
        point.bits = 8.0 * double(weightBytes) / double(result.linearWeights);
        point.weightBytes = weightBytes;
        return point;
    };
    for (const FrontierPoint& p : frontier.points) {
        SearchPoint point = pointFor(p.choice);
        point.klSum = p.cost; // the solver's sum, in its order
        point.predictedKl = result.klModel.predict(p.cost);
        result.frontier.push_back(std::move(point));
    }

    std::optional<size_t> chosen;
    std::optional<uint64_t> optionBudget; // a size budget in the solver's bytes
    std::string smallest = fixed(result.frontier.front().bits, 4) + " bits per weight, " +
                           std::to_string(result.frontier.front().bytes) + " bytes";
    if (request.budgetKl) {
        // The smallest recipe within the KL budget; with a size budget too it must fit it (the
        // smallest does or none does).
        // The predicted KL falls along the frontier (KlSumModel is increasing in the sum).
        for (size_t i = 0; i < result.frontier.size() && !chosen; ++i)
            if (result.frontier[i].predictedKl <= *request.budgetKl)
                chosen = i;
        if (!chosen)
            throw Error("--budget-kl", fixed(*request.budgetKl, 6),
                        "infeasible: the least predicted KL these candidates give is " +
                            fixed(result.frontier.back().predictedKl, 6));
        const SearchPoint& p = result.frontier[*chosen];
        if ((request.budgetBits && p.bits > *request.budgetBits) ||
            (request.budgetBytes && p.bytes > *request.budgetBytes))
            throw Error("--budget-kl", fixed(*request.budgetKl, 6),
                        "infeasible within the size budget: the smallest recipe with this "
                        "predicted KL takes " +
                            fixed(p.bits, 4) + " bits per weight, " + std::to_string(p.bytes) +
                            " bytes");
    } else if (request.budgetBits) {
        // effective_bits = 8 (excluded + units' bytes) / weights <= B, in integers.
        const long double limit =
            (long double)(*request.budgetBits) * (long double)result.linearWeights / 8.0L;
        const long double unitBudget = std::floor(limit) - (long double)excludedLinearBytes;
        if (unitBudget >= 0) {
            optionBudget = uint64_t(unitBudget);
            chosen = frontier.leastCostWithin(*optionBudget);
        }
        if (!chosen)
            throw Error("--budget-bpw", fixed(*request.budgetBits, 4),
                        "infeasible: the smallest recipe these candidates give takes " + smallest);
    } else if (request.budgetBytes) {
        if (*request.budgetBytes >= result.fixedBytes) {
            optionBudget = *request.budgetBytes - result.fixedBytes;
            chosen = frontier.leastCostWithin(*optionBudget);
        }
        if (!chosen)
            throw Error("--budget-bytes", std::to_string(*request.budgetBytes),
                        "infeasible: the smallest recipe these candidates give takes " + smallest);
    }
    result.chosen = *chosen;
    if (refine) {
        const Clock::time_point refineStart = Clock::now();
        CalibrationPipeline forward(*referencePrep->model, *referencePrep->planner,
                                    planKeepingOptions(*referencePrep));
        RefinementInputs in;
        in.units = &result.units;
        in.plansOf = &plansOf;
        in.options = &options;
        in.optionBudget = *optionBudget;
        in.rounds = request.refineRounds;
        const double refineSteps = double(quantizingCount); // its share of the progress bar
        result.refinement = refineInContext(
            *rows, forward, in, result.frontier[result.chosen].choice,
            [&](double f, const std::string& m) {
                return !progress || progress(std::min(1.0, (done + f * refineSteps) / steps), m);
            });
        done += refineSteps;
        if (result.refinement->choice != result.frontier[result.chosen].choice) {
            result.refined = pointFor(result.refinement->choice);
            result.refined->predictedKl = result.refinement->predictedKl;
        }
        plansOf.clear();
        rows.reset();
        referencePrep.reset();
        result.refineSeconds = secondsSince(refineStart);
    }
    const SearchPoint& point = result.pick();
    result.recipe = recipeForChoice(base, candidates, result.units, point.choice);

    // The recipe as written must be the point: sized by the one definition, each unit's
    // layers planned with the chosen scheme, within the budget.
    const ExportSizeReport written = writtenRecipeSize(request.run.modelDir, result.recipe,
                                                       candidates, result.units, point.choice);
    result.effectiveBits = written.effectiveBits().value_or(0.0);
    result.modelBytes = written.format("quark")->modelBytes;
    if (written.format("quark")->linearWeightBytes != point.weightBytes ||
        written.format("quark")->modelBytes != point.bytes ||
        (request.budgetBits && result.effectiveBits > *request.budgetBits) ||
        (request.budgetBytes && result.modelBytes > *request.budgetBytes))
        throw Error("recipe search", budgetFlag(request),
                    "internal error: the written recipe's size (" +
                        std::to_string(result.modelBytes) + " bytes, " +
                        fixed(result.effectiveBits, 4) +
                        " bits per weight) is not the chosen "
                        "point's");

    if (request.measure) {
        const Clock::time_point measureStart = Clock::now();
        RunRequest run = request.run;
        run.recipe = result.recipe;
        run.evaluate = true;
        run.fidelity = true;
        run.analyze = false;
        run.sensitivity = false;
        run.outDir.clear();
        run.exportFormats.clear();
        const RunOutcome out = runJob(run, part("measuring the chosen recipe"));
        result.measuredPerplexity = out.perplexity;
        result.measuredFidelity = out.fidelity;
        // The reference pass's, unless the costs had fewer windows than the measurement.
        if (out.fidelity && (!result.fpPerplexity || costsOnFewerWindows))
            result.fpPerplexity = out.fidelity->perplexityBase.value;
        result.recipe = out.recipe; // with its provenance (model, device, dtype)
        result.warnings.insert(result.warnings.end(), out.warnings.begin(), out.warnings.end());
        result.measureSeconds = secondsSince(measureStart);
    }
    return result;
}

} // namespace qs
