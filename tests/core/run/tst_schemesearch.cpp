// The recipe search on a small synthetic Llama: its per-unit costs are what a sensitivity study
// or a separate run of the unit alone measures (to the last bit, weight-only under float
// calibration: the same blocks on the same inputs, the same head, summed in the same order); its
// pick is the brute-force optimum of the predicted KL within the budget; the recipe it writes is
// the chosen point (sized by exportSize, never above the budget) and replays to the same
// figures; bad requests are refused naming the flag.
#include "SearchTestModel.h"
#include "TestMain.h"
#include "TestSupport.h"

#include "export/ExportSize.h"
#include "model/ModelLoader.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "run/QuantizationRun.h"
#include "run/SchemeSearch.h"
#include "run/SensitivityRun.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>

#include <functional>

class TestSchemeSearch : public QObject {
    Q_OBJECT

private:
    QString m_model;
    std::vector<std::string> m_layers;
    std::vector<std::string> m_candidates{"none", "int4_wo_32", "int8"};
    qs::SchemeSearchResult m_result; // at 6 bits per weight

    qs::RunRequest base() const { return qs::test::searchTestRun(m_model); }

    qs::SchemeSearchRequest search(double bits) const {
        qs::SchemeSearchRequest q;
        q.run = base();
        q.candidates = m_candidates;
        q.budgetBits = bits;
        return q;
    }

    int candidate(const std::string& name) const {
        return int(std::find(m_candidates.begin(), m_candidates.end(), name) -
                   m_candidates.begin());
    }

    const qs::SearchUnit& unitNamed(const std::string& layer) const {
        for (const qs::SearchUnit& u : m_result.units)
            if (std::find(u.layers.begin(), u.layers.end(), layer) != u.layers.end())
                return u;
        qFatal("no unit holds %s", layer.c_str());
    }

private Q_SLOTS:
    void initTestCase() {
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
        m_model = qs::test::writeSearchTestModel("search");
        std::vector<const qs::ModuleNode*> nodes;
        const qs::ModuleNode tree = qs::openModelHandle(m_model.toStdString()).moduleTree();
        tree.collect("linear", nodes);
        for (const qs::ModuleNode* n : nodes)
            if (n->blockIndex >= 0)
                m_layers.push_back(n->name);
        QCOMPARE(int(m_layers.size()), 2 * 7);
        m_result = qs::runSchemeSearch(search(6.0));
    }

    void unitsShareFusedInputs() {
        // Per block: q/k/v, o, gate/up, down.
        QCOMPARE(int(m_result.units.size()), 2 * 4);
        const qs::SearchUnit& qkv = unitNamed("model.layers.1.self_attn.k_proj");
        QCOMPARE(int(qkv.layers.size()), 3);
        QCOMPARE(qkv.block, 1);
        QCOMPARE(int(unitNamed("model.layers.0.mlp.up_proj").layers.size()), 2);
        QCOMPARE(int(unitNamed("model.layers.0.mlp.down_proj").layers.size()), 1);
    }

    void costsAreTheSensitivityStudysKlAlone() {
        // The first quantizing candidate's calibration and reference are the study's own.
        qs::RunRequest req = base();
        req.recipe.global = qs::quant::resolveScheme("int4_wo_32");
        const qs::SensitivityResult study = qs::runSensitivity(req);
        const int c = candidate("int4_wo_32");
        int compared = 0;
        for (const qs::SensitivityRow& row : study.rows) {
            const qs::SearchUnit& unit = unitNamed(row.layer);
            if (unit.layers.size() != 1)
                continue;
            QVERIFY(unit.bytes[size_t(c)].has_value());
            QVERIFY(unit.kl[size_t(c)] == row.aloneKl);
            QVERIFY(row.aloneKl > 0.0);
            ++compared;
        }
        QCOMPARE(compared, 2 * 2); // o_proj and down_proj of both blocks
        QVERIFY(*m_result.fpPerplexity == study.fpPerplexity);
    }

    void groupedCostIsASeparateRunOfTheUnitAlone() {
        const qs::SearchUnit& qkv = unitNamed("model.layers.0.self_attn.q_proj");
        qs::RunRequest req = base();
        req.recipe.global = qs::quant::resolveScheme("int4_wo_32");
        for (const std::string& l : m_layers)
            if (std::find(qkv.layers.begin(), qkv.layers.end(), l) == qkv.layers.end())
                req.recipe.exclude.push_back(qs::exactLayerPattern(l));
        req.evaluate = true;
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        QVERIFY(qkv.kl[size_t(candidate("int4_wo_32"))] == out.fidelity->klMean.value);
    }

    void anchorsAreSeparateRunsOfEachCandidateEverywhere() {
        // One anchor per quantizing candidate: the sum of its units' KL alone in unit order, and
        // the KL of the recipe with every unit that fits it quantized by it, which a separate
        // run of that recipe gives to the last bit (the same calibration, blocks and head), at
        // the recipe's effective bits.
        const std::vector<qs::KlAnchor>& anchors = m_result.klModel.anchors();
        QCOMPARE(int(anchors.size()), 2);
        for (const qs::KlAnchor& a : anchors) {
            const size_t c = size_t(candidate(a.candidate));
            double sum = 0.0;
            for (const qs::SearchUnit& u : m_result.units)
                if (u.bytes[c])
                    sum += u.kl[c];
            QVERIFY(a.klSum == sum);
            qs::RunRequest req = base();
            req.recipe.global = qs::quant::resolveScheme(a.candidate);
            req.recipe.unfitPolicy = "skip";
            for (const qs::SearchUnit& u : m_result.units)
                if (!u.bytes[c])
                    for (const std::string& l : u.layers)
                        req.recipe.exclude.push_back(qs::exactLayerPattern(l));
            req.evaluate = true;
            const qs::QuantizationOutcome out = qs::runQuantization(req);
            QVERIFY2(a.klMeasured == out.fidelity->klMean.value, a.candidate.c_str());
            // Its size, by the one definition.
            const qs::ExportSizeReport size = qs::exportSize(m_model.toStdString(), req.recipe);
            QVERIFY(*size.effectiveBits() == a.bits);
        }
    }

    void pickIsTheBruteForceOptimumWithinTheBudget() {
        // Every choice of 3 candidates for 8 units (6561), summed in unit order as the solver
        // sums: the least predicted KL whose effective bits fit 6.
        const std::vector<qs::SearchUnit>& units = m_result.units;
        uint64_t excluded = 0; // nothing excluded: every linear is in a unit
        double best = -1.0;
        std::vector<int> choice(units.size(), 0);
        std::function<void(size_t, uint64_t, double)> walk = [&](size_t u, uint64_t bytes,
                                                                 double kl) {
            if (u == units.size()) {
                const double bits = 8.0 * double(excluded + bytes) / double(m_result.linearWeights);
                if (bits <= 6.0 && (best < 0 || kl < best))
                    best = kl;
                return;
            }
            for (size_t c = 0; c < m_candidates.size(); ++c)
                if (units[u].bytes[c])
                    walk(u + 1, bytes + *units[u].bytes[c], kl + units[u].kl[c]);
        };
        walk(0, 0, 0.0);
        // The search minimises the sum; its prediction is the sum through the fitted map, which
        // is increasing, so the sum's optimum is the prediction's.
        const qs::SearchPoint& chosen = m_result.frontier[m_result.chosen];
        QVERIFY(best > 0.0);
        QVERIFY(chosen.klSum == best);
        double sum = 0.0;
        for (size_t u = 0; u < units.size(); ++u)
            sum += units[u].kl[size_t(chosen.choice[u])];
        QVERIFY(sum == chosen.klSum);
        QVERIFY(chosen.predictedKl == m_result.klModel.predict(sum));
        // A mix: at 6 bits neither int8 everywhere (8+) nor int4 everywhere is the optimum's only
        // possibility, and the budget is used but never exceeded.
        QVERIFY(m_result.effectiveBits <= 6.0);
        QVERIFY(m_result.effectiveBits == chosen.bits);
    }

    void writtenRecipeIsTheChosenPoint() {
        const qs::ExportSizeReport size = qs::exportSize(m_model.toStdString(), m_result.recipe);
        QVERIFY(*size.effectiveBits() == m_result.effectiveBits);
        QVERIFY(size.format("quark")->modelBytes == m_result.modelBytes);
        const qs::SearchPoint& chosen = m_result.frontier[m_result.chosen];
        for (const qs::LinearSize& l : size.linears) {
            const qs::SearchUnit& unit = unitNamed(l.name);
            const size_t u = size_t(&unit - m_result.units.data());
            const std::string& name = m_candidates[size_t(chosen.choice[u])];
            if (name == "none")
                QVERIFY(!l.scheme);
            else
                QVERIFY(l.scheme && *l.scheme == qs::quant::resolveScheme(name));
        }
    }

    void measuredRecipeReplays() {
        QVERIFY(m_result.measuredFidelity.has_value());
        QVERIFY(m_result.measuredFidelity->klMean.value > 0.0);
        const QString path = qs::test::tempDir("replay") + "/recipe.json";
        m_result.recipe.save(path.toStdString());
        qs::RunRequest req = base();
        req.recipe = qs::Recipe::load(path.toStdString());
        req.evaluate = true;
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        QVERIFY(out.perplexity->perplexity == m_result.measuredPerplexity->perplexity);
        QVERIFY(out.fidelity->klMean.value == m_result.measuredFidelity->klMean.value);
    }

    void klBudgetPicksTheSmallestWithinIt() {
        qs::SchemeSearchRequest q = search(6.0);
        q.budgetBits.reset();
        const double target = m_result.frontier[m_result.chosen].predictedKl;
        q.budgetKl = target;
        q.measure = false;
        const qs::SchemeSearchResult r = qs::runSchemeSearch(q);
        const qs::SearchPoint& p = r.frontier[r.chosen];
        QVERIFY(p.predictedKl <= target);
        for (const qs::SearchPoint& other : r.frontier)
            if (other.predictedKl <= target)
                QVERIFY(other.bytes >= p.bytes);
        QVERIFY(!r.measuredFidelity.has_value());
    }

    void knownCostsGiveTheSameFrontier() {
        qs::SchemeSearchRequest q = search(7.0);
        q.measure = false;
        for (const qs::SearchUnit& u : m_result.units)
            for (size_t c = 0; c < m_candidates.size(); ++c)
                if (u.bytes[c] && m_candidates[c] != "none")
                    q.knownCosts[u.name][m_candidates[c]] = u.kl[c];
        q.knownCostsKey = m_result.costsKey;
        // Without the anchors the prediction cannot be made: refused, naming the candidate.
        try {
            qs::runSchemeSearch(q);
            QFAIL("costs without anchors were accepted");
        } catch (const qs::Error& e) {
            QCOMPARE(e.field(), std::string("int4_wo_32"));
        }
        q.knownAnchors = m_result.klModel.anchors();
        qs::SchemeSearchResult r;
        try {
            r = qs::runSchemeSearch(q);
        } catch (const qs::Error& e) {
            QFAIL(e.what());
        }
        QVERIFY(r.costsReused);
        QCOMPARE(r.frontier.size(), m_result.frontier.size());
        for (size_t i = 0; i < r.frontier.size(); ++i) {
            QVERIFY(r.frontier[i].bytes == m_result.frontier[i].bytes);
            QVERIFY(r.frontier[i].predictedKl == m_result.frontier[i].predictedKl);
        }
        QVERIFY(r.effectiveBits <= 7.0);
        QVERIFY(r.effectiveBits > m_result.effectiveBits); // a larger budget, used
        // Costs of another recipe (other windows) are refused.
        q.run.recipe.evaluation.maxWindows = 4;
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::runSchemeSearch(q));
    }

    void costWindowsAreTheFirstWindows() {
        // Costs on 2 of the 5 evaluation windows are the costs of a search on those 2 windows,
        // to the last bit: the same windows, blocks and head.
        qs::SchemeSearchRequest few = search(6.0);
        few.measure = false;
        few.costWindows = 2;
        qs::SchemeSearchRequest two = few;
        two.costWindows = 0;
        two.run.recipe.evaluation.maxWindows = 2;
        const qs::SchemeSearchResult a = qs::runSchemeSearch(few), b = qs::runSchemeSearch(two);
        QCOMPARE(a.costWindows, int64_t(2));
        QVERIFY(a.costsKey != m_result.costsKey); // not the costs of all five windows
        QCOMPARE(a.units.size(), b.units.size());
        bool differs = false;
        for (size_t u = 0; u < a.units.size(); ++u)
            for (size_t c = 0; c < m_candidates.size(); ++c) {
                QVERIFY(a.units[u].kl[c] == b.units[u].kl[c]);
                differs = differs || a.units[u].kl[c] != m_result.units[u].kl[c];
            }
        QVERIFY(differs); // ...and not those of all five
        for (size_t i = 0; i < a.klModel.anchors().size(); ++i)
            QVERIFY(a.klModel.anchors()[i].klMeasured == b.klModel.anchors()[i].klMeasured);
        few.costWindows = -1;
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::runSchemeSearch(few));
    }

    void scaledCostsMeasureTheBudgetsCandidateAndScaleTheOthers() {
        // Scaled unit costs: each unit's KL alone measured under one candidate, the largest
        // whose uniform recipe fits the budget (at 6 bits int4_wo_32: int8 everywhere takes
        // 8), the very measurement the measured costs make (the same plans, blocks and head),
        // and the other candidate's carried over by the unit's local output errors.
        qs::SchemeSearchRequest q = search(6.0);
        q.measure = false;
        q.unitCosts = qs::UnitCosts::Scaled;
        const qs::SchemeSearchResult r = qs::runSchemeSearch(q);
        QVERIFY(r.unitCosts == qs::UnitCosts::Scaled);
        QCOMPARE(r.scaledFrom, std::string("int4_wo_32"));
        QVERIFY(r.costsKey != m_result.costsKey); // not interchangeable with measured costs
        QCOMPARE(r.units.size(), m_result.units.size());
        const size_t int4 = size_t(candidate("int4_wo_32")), int8 = size_t(candidate("int8"));
        int scaledCosts = 0;
        for (size_t u = 0; u < r.units.size(); ++u) {
            const qs::SearchUnit& unit = r.units[u];
            QCOMPARE(unit.measuredCandidate, int(int4));
            QVERIFY(*unit.bytes[int4] < *unit.bytes[int8]);
            QVERIFY(unit.kl[int4] == m_result.units[u].kl[int4]);
            QVERIFY(unit.localError[int4] > unit.localError[int8]);
            QVERIFY(unit.localError[int8] > 0.0);
            QVERIFY(unit.kl[int8] == unit.kl[int4] * unit.localError[int8] / unit.localError[int4]);
            QVERIFY(unit.kl[int8] != m_result.units[u].kl[int8]); // estimated, not measured
            ++scaledCosts;
        }
        QCOMPARE(scaledCosts, 2 * 4);
        // The anchors are measured as before; their sums are of the scaled costs.
        QCOMPARE(r.klModel.anchors().size(), m_result.klModel.anchors().size());
        for (size_t i = 0; i < r.klModel.anchors().size(); ++i) {
            const qs::KlAnchor& a = r.klModel.anchors()[i];
            QVERIFY(a.klMeasured == m_result.klModel.anchors()[i].klMeasured);
            const size_t c = size_t(candidate(a.candidate));
            double sum = 0.0;
            for (const qs::SearchUnit& unit : r.units)
                sum += unit.kl[c];
            QVERIFY(a.klSum == sum);
        }
        // At 9 bits int8 everywhere fits: int8 is measured, int4_wo_32 scaled from it; the
        // budget is part of the key (it chose what was measured).
        q.budgetBits = 9.0;
        const qs::SchemeSearchResult nine = qs::runSchemeSearch(q);
        QCOMPARE(nine.scaledFrom, std::string("int8"));
        QVERIFY(nine.costsKey != r.costsKey);
        for (size_t u = 0; u < nine.units.size(); ++u) {
            const qs::SearchUnit& unit = nine.units[u];
            QCOMPARE(unit.measuredCandidate, int(int8));
            QVERIFY(unit.kl[int8] == m_result.units[u].kl[int8]);
            QVERIFY(unit.kl[int4] == unit.kl[int8] * unit.localError[int4] / unit.localError[int8]);
        }
        // A KL budget picks no size: each unit's smallest, as at 6 bits.
        q.budgetBits.reset();
        q.budgetKl = 1.0;
        const qs::SchemeSearchResult kl = qs::runSchemeSearch(q);
        QVERIFY(kl.scaledFrom.empty());
        for (size_t u = 0; u < kl.units.size(); ++u)
            QVERIFY(kl.units[u].kl[int4] == r.units[u].kl[int4]);
    }

    void badRequestsNameTheFlag() {
        QCOMPARE(qs::test::searchRefusal(search(1.0)),
                 std::string("--budget-bpw")); // below int4's 4.x bits
        qs::SchemeSearchRequest q = search(6.0);
        q.candidates = {"none", "int5_wo"};
        QCOMPARE(qs::test::searchRefusal(q), std::string("--candidates"));
        q.candidates = {"none"};
        QCOMPARE(qs::test::searchRefusal(q), std::string("--candidates"));
        q = search(6.0);
        q.run.recipe.global = qs::quant::resolveScheme("int8");
        QCOMPARE(qs::test::searchRefusal(q), std::string("recipe"));
        q = search(6.0);
        q.run.recipe.evaluation.dataPath.clear();
        try {
            qs::runSchemeSearch(q);
            QFAIL("a search without evaluation text was accepted");
        } catch (const qs::Error& e) {
            // The recipe's field, which the workbench's error box points to its panel.
            QCOMPARE(e.field(), std::string("evaluation.data"));
        }
    }
};

QS_TEST_GUILESS_MAIN(TestSchemeSearch)
#include "tst_schemesearch.moc"
