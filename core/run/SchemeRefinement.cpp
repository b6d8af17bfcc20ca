#include "run/SchemeRefinement.h"

#include "util/Error.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace qs {

namespace {

// A choice's plans: every unit's layers from its candidate's calibration, the rest from any.
// LayerPlan cannot be copied (its quantizers own their observers), so plans move between the
// calibrations' sets and this one: a slot holds the plan of its owner, whose own set holds the
// slot's hole (a moved-from plan) meanwhile.
class MixedPlans {
public:
    explicit MixedPlans(const RefinementInputs& in) : m_in(in) {
        auto& plansOf = *in.plansOf;
        for (size_t c = 0; c < plansOf.size() && m_plans.empty(); ++c)
            if (!plansOf[c].empty()) {
                m_plans.resize(plansOf[c].size());
                m_owner.resize(plansOf[c].size());
                for (size_t b = 0; b < plansOf[c].size(); ++b) {
                    for (size_t i = 0; i < plansOf[c][b].size(); ++i) {
                        m_where[plansOf[c][b][i].name] = {b, i};
                        m_plans[b].push_back(std::move(plansOf[c][b][i]));
                    }
                    m_owner[b].assign(m_plans[b].size(), c);
                }
            }
        if (m_plans.empty())
            throw Error("recipe search", "--refine", "internal error: no calibrated plans kept");
    }

    // Unit u's layers from candidate c's plans (a candidate without plans: left as they are,
    // and off by the filter).
    void set(size_t u, int c) {
        if (!quantizes(c))
            return;
        auto& plansOf = *m_in.plansOf;
        for (const std::string& l : (*m_in.units)[u].layers) {
            const auto [b, i] = m_where.at(l);
            const size_t owner = m_owner[b][i];
            if (owner == size_t(c))
                continue;
            std::swap(m_plans[b][i], plansOf[size_t(c)][b][i]);        // c's plan in the slot
            std::swap(plansOf[size_t(c)][b][i], plansOf[owner][b][i]); // the owner's plan home
            m_owner[b][i] = size_t(c);
            if (m_plans[b][i].name != l)
                throw Error("recipe search", l,
                            "internal error: the calibrations planned the layers in different "
                            "orders");
        }
    }
    void setAll(const std::vector<int>& choice) {
        for (size_t u = 0; u < choice.size(); ++u)
            set(u, choice[u]);
    }

    // The layers a choice quantizes (units on a candidate with plans).
    std::set<std::string> quantizedLayers(const std::vector<int>& choice) const {
        std::set<std::string> layers;
        for (size_t u = 0; u < choice.size(); ++u)
            if (quantizes(choice[u]))
                layers.insert((*m_in.units)[u].layers.begin(), (*m_in.units)[u].layers.end());
        return layers;
    }
    bool quantizes(int c) const {
        return size_t(c) < m_in.plansOf->size() && !(*m_in.plansOf)[size_t(c)].empty();
    }

    std::vector<std::vector<LayerPlan>>& plans() { return m_plans; }

private:
    const RefinementInputs& m_in;
    std::vector<std::vector<LayerPlan>> m_plans;
    std::vector<std::vector<size_t>> m_owner; // the candidate whose plan each slot holds
    std::map<std::string, std::pair<size_t, size_t>> m_where;
};

} // namespace

InContextRefinement
refineInContext(PlanRowEvaluator& rows, CalibrationPipeline& pipeline, const RefinementInputs& in,
                const std::vector<int>& start,
                const std::function<bool(double, const std::string&)>& progress) {
    const std::vector<SearchUnit>& units = *in.units;
    const FrontierUnits& options = *in.options;
    MixedPlans mixed(in);
    // Progress: every round at most one evaluation per (unit, other option) and one from block 0.
    int perRound = 1; // at most: the switches that cannot fit are not measured
    for (const auto& unitOptions : options)
        for (const auto& o : unitOptions)
            perRound += o ? 1 : 0;
    perRound -= int(options.size());
    const double steps = double(std::max(1, in.rounds) * perRound + 1);
    double done = 0;
    auto part = [&](const std::string& what) -> PipelineProgress {
        return [&, what](double f, const std::string& m) {
            return !progress || progress(std::min(1.0, (done + f) / steps), what + ": " + m);
        };
    };

    // A choice from block 0: its KL on the cost windows, and every block's input.
    std::vector<at::Tensor> streams;
    auto measureChoice = [&](const std::vector<int>& choice, std::vector<at::Tensor>& inputs,
                             const std::string& what) {
        mixed.setAll(choice);
        const double kl = rows.measure(pipeline, mixed.plans(),
                                       onlyLayersQuantized(mixed.quantizedLayers(choice)),
                                       rows.referenceInput(0), 0, &inputs, part(what))
                              .fidelity.klMean;
        ++done;
        return kl;
    };

    // A switch no choice within the budget can hold (the unit's option with every other unit at
    // its smallest does not fit) is not measured: it cannot be picked.
    std::vector<uint64_t> smallest(units.size(), UINT64_MAX);
    uint64_t smallestSum = 0;
    for (size_t u = 0; u < units.size(); ++u) {
        for (const auto& o : options[u])
            if (o)
                smallest[u] = std::min(smallest[u], o->bytes);
        smallestSum += smallest[u];
    }
    auto canFit = [&](size_t u, size_t c) {
        return smallestSum - smallest[u] + options[u][c]->bytes <= in.optionBudget;
    };

    InContextRefinement out;
    out.choice = start;
    out.klMeasured = measureChoice(start, streams, "refinement: the pick");
    out.predictedKl = out.klMeasured;
    for (int round = 0; round < in.rounds; ++round) {
        RefinementRound r;
        r.klBefore = out.klMeasured;
        const std::vector<int>& current = out.choice;
        mixed.setAll(current);
        const std::set<std::string> quantized = mixed.quantizedLayers(current);
        // In-context costs, shifted per unit so that the least is 0 for the solver (its costs
        // add from 0; the prediction adds the deltas themselves).
        FrontierUnits contextOptions = options;
        for (size_t u = 0; u < units.size(); ++u) {
            std::vector<std::optional<double>>& delta = r.delta.emplace_back(options[u].size());
            for (size_t c = 0; c < options[u].size(); ++c) {
                if (options[u][c] && !canFit(u, c))
                    contextOptions[u][c].reset();
                if (!contextOptions[u][c])
                    continue;
                if (int(c) == current[u]) {
                    delta[c] = 0.0;
                    continue;
                }
                std::set<std::string> layers = quantized;
                for (const std::string& l : units[u].layers)
                    layers.erase(l);
                if (mixed.quantizes(int(c)))
                    layers.insert(units[u].layers.begin(), units[u].layers.end());
                mixed.set(u, int(c));
                const int from = units[u].block;
                delta[c] =
                    rows.measure(
                            pipeline, mixed.plans(), onlyLayersQuantized(std::move(layers)),
                            streams.at(size_t(from)), from, nullptr,
                            part("refinement " + std::to_string(round + 1) + ": " + units[u].name))
                        .fidelity.klMean -
                    out.klMeasured;
                mixed.set(u, current[u]);
                ++done;
                ++r.evaluations;
            }
            double least = 0.0;
            for (const std::optional<double>& d : delta)
                least = std::min(least, d.value_or(0.0));
            for (size_t c = 0; c < options[u].size(); ++c)
                if (contextOptions[u][c])
                    contextOptions[u][c]->cost = *delta[c] - least;
        }
        // The proposal within the budget, each unit's change from the current choice charged
        // `tau` more (tau 0: the in-context optimum; larger: fewer units change).
        auto propose = [&](double tau) -> std::optional<std::vector<int>> {
            FrontierUnits charged = contextOptions;
            for (size_t u = 0; u < units.size(); ++u)
                for (size_t c = 0; c < charged[u].size(); ++c)
                    if (charged[u][c] && int(c) != current[u])
                        charged[u][c]->cost += tau;
            const Frontier frontier = paretoFrontier(charged);
            const std::optional<size_t> pick = frontier.leastCostWithin(in.optionBudget);
            if (!pick) // the current choice fits: only a thinned frontier could lose it
                return std::nullopt;
            return frontier.points[*pick].choice;
        };
        auto changes = [&](const std::vector<int>& choice) {
            int n = 0;
            for (size_t u = 0; u < units.size(); ++u)
                n += choice[u] != current[u] ? 1 : 0;
            return n;
        };
        std::optional<std::vector<int>> proposal = propose(0.0);
        if (!proposal)
            break;
        // Where the switches' costs do not add over many units at once (a saturating model),
        // the proposal measures higher; then one with at most half as many changes is tried,
        // from the same measured costs, down to one change.
        double tauHigh = 0.0; // above it no change pays (each switch's cost + tau > 0)
        for (const auto& unitDelta : r.delta)
            for (const auto& d : unitDelta)
                if (d)
                    tauHigh = std::max(tauHigh, -*d);
        std::vector<at::Tensor> proposedStreams;
        while (true) {
            r.proposed = *proposal;
            r.unitsChanged = changes(r.proposed);
            r.predictedKl = out.klMeasured;
            for (size_t u = 0; u < units.size(); ++u)
                r.predictedKl += *r.delta[u][size_t(r.proposed[u])];
            if (r.unitsChanged == 0)
                break;
            r.klAfter = measureChoice(r.proposed, proposedStreams,
                                      "refinement " + std::to_string(round + 1) + ": a proposal");
            r.accepted = *r.klAfter < out.klMeasured;
            if (r.accepted || r.unitsChanged == 1)
                break;
            // The least charge that halves the changes (bisection; changes fall as tau grows).
            const int limit = r.unitsChanged / 2;
            double low = 0.0, high = tauHigh * 2.0 + 1e-12;
            std::optional<std::vector<int>> smaller;
            for (int i = 0; i < 40; ++i) {
                const double tau = 0.5 * (low + high);
                std::optional<std::vector<int>> p = propose(tau);
                if (p && changes(*p) <= limit) {
                    high = tau;
                    smaller = std::move(p);
                } else {
                    low = tau;
                }
            }
            if (!smaller || changes(*smaller) == 0)
                break;
            proposal = std::move(smaller);
            ++r.smallerSteps;
        }
        const bool accepted = r.accepted;
        if (accepted) {
            out.choice = r.proposed;
            out.klMeasured = *r.klAfter;
            out.predictedKl = r.predictedKl;
            streams = std::move(proposedStreams);
        }
        out.rounds.push_back(std::move(r));
        if (!accepted)
            break;
    }
    return out;
}

} // namespace qs
