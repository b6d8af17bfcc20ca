// Sensitivity calibrates once and reuses the frozen plans for every row. Its rows must equal
// what separate runs of each row's recipe give (the way it was measured before: one
// calibration plus evaluation per row): exactly for weight-only schemes, and for static
// activation schemes under float calibration too, since float-calibrated ranges do not depend
// on which other layers are quantized. Under sequential calibration they may differ.
#include "TestMain.h"
#include "TestSupport.h"

#include "model/ModelLoader.h"
#include "recipe/LayerPattern.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "run/Run.h"
#include "run/SensitivityRun.h"
#include "synth/SyntheticModel.h"
#include "util/Error.h"

#include <QtTest>

class TestSensitivityRun : public QObject {
    Q_OBJECT

private:
    QString m_model;
    std::vector<std::string> m_layers;

    qs::RunRequest request(const std::string& scheme, const std::string& mode) const {
        qs::QuantFlags flags;
        flags.quantScheme = scheme;
        flags.calibData = qs::test::sharedPath("data/tinystories-calib.txt").toStdString();
        flags.numCalibData = 4;
        flags.seqLen = 32;
        flags.calibMode = mode;
        qs::RunRequest req;
        req.modelDir = m_model.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        req.recipe.evaluation.dataPath =
            qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        req.recipe.evaluation.seqLen = 48;
        req.recipe.evaluation.maxWindows = 5;
        return req;
    }

    // A row measured the old way: its own recipe, calibrated and evaluated on its own, with
    // its fidelity to the full-precision model (mean KL, top-1 agreement).
    struct Separate {
        double perplexity, kl, sameTop;
    };
    Separate separateRun(qs::RunRequest req, const std::string& layer, bool alone) const {
        req.evaluate = true;
        if (alone) {
            req.recipe.kvCache.reset();
            for (const std::string& other : m_layers)
                if (other != layer)
                    req.recipe.exclude.push_back(qs::exactLayerPattern(other));
        } else {
            req.recipe.exclude.push_back(qs::exactLayerPattern(layer));
        }
        const qs::QuantizationOutcome out = qs::runQuantization(req);
        return {out.perplexity->perplexity, out.fidelity->klMean.value,
                out.fidelity->sameTop.value};
    }

    void compareRows(const std::string& scheme, const std::string& mode, bool expectEqual) {
        const qs::RunRequest req = request(scheme, mode);
        std::vector<qs::SensitivityRow> streamed;
        const qs::SensitivityResult r = qs::runSensitivity(
            req, {}, [&](const qs::SensitivityRow& row) { streamed.push_back(row); });
        QCOMPARE(r.rows.size(), m_layers.size());
        QCOMPARE(streamed.size(), r.rows.size());

        qs::EvalRequest fp;
        fp.evaluation = req.recipe.evaluation;
        // Bit for bit (QCOMPARE on doubles is fuzzy in Qt 6.4): the same forward on the same
        // windows, once inside the study and once on its own.
        QVERIFY(r.fpPerplexity == qs::evaluateModelOnText(m_model.toStdString(), fp).perplexity);
        qs::RunRequest whole = req;
        whole.evaluate = true;
        QVERIFY(r.fullPerplexity == qs::runQuantization(whole).perplexity->perplexity);

        int differing = 0;
        for (size_t i : {size_t(0), size_t(5), m_layers.size() - 1}) {
            const qs::SensitivityRow& row = r.rows[i];
            QCOMPARE(row.layer, m_layers[i]);
            const Separate alone = separateRun(req, row.layer, true);
            const Separate allBut = separateRun(req, row.layer, false);
            if (expectEqual) {
                // The same blocks on the same inputs, the same head, summed in the same order:
                // equal to the last bit, KL and top-1 agreement included.
                QVERIFY(row.alonePerplexity == alone.perplexity);
                QVERIFY(row.allButPerplexity == allBut.perplexity);
                QVERIFY(row.aloneKl == alone.kl);
                QVERIFY(row.aloneSameTop == alone.sameTop);
                QVERIFY(row.allButKl == allBut.kl);
                QVERIFY(row.allButSameTop == allBut.sameTop);
                QVERIFY(row.aloneKl > 0.0);
            }
            differing += (row.alonePerplexity != alone.perplexity) +
                         (row.allButPerplexity != allBut.perplexity);
        }
        if (!expectEqual)
            QVERIFY(differing > 0); // sequential ranges follow the whole recipe's upstream
    }

private Q_SLOTS:
    void initTestCase() {
        qputenv("QS_CACHE_DIR", qs::test::tempDir("cache").toUtf8());
        qs::SyntheticModelOptions o;
        o.hiddenSize = 64, o.intermediateSize = 160, o.numLayers = 2, o.numHeads = 4,
        o.numKvHeads = 2, o.seed = 9;
        o.outDir = (qs::test::tempDir("sensitivity") + "/model").toStdString();
        qs::writeSyntheticModel(o);
        m_model = QString::fromStdString(o.outDir);
        std::vector<const qs::ModuleNode*> nodes;
        const qs::ModuleNode tree = qs::openModelHandle(o.outDir).moduleTree();
        tree.collect("linear", nodes);
        for (const qs::ModuleNode* n : nodes)
            if (n->blockIndex >= 0)
                m_layers.push_back(n->name);
        QCOMPARE(int(m_layers.size()), 2 * 7);
    }

    void weightOnlyRowsEqualSeparateRuns() { compareRows("int4_wo_32", "float", true); }
    void floatCalibratedRowsEqualSeparateRuns() { compareRows("int8", "float", true); }
    void sequentialRowsReuseTheWholeRecipesRanges() { compareRows("int8", "sequential", false); }

    // The study's progress follows its work (the ETA is extrapolated from it): a measurement
    // advances the fraction in proportion to the multiply-adds it runs, from its block through
    // the head, so "alone" of a block-0 layer advances it (M0 + M1 + H) / (M1 + H) times as much
    // as "alone" of a block-1 layer (M: a block's linears, H: the head). Counting measurements
    // alike gave 1.
    void progressFollowsTheWork() {
        std::vector<std::pair<double, std::string>> reports;
        qs::runSensitivity(request("int8", "float"), [&](double f, const std::string& m) {
            reports.emplace_back(f, m);
            return true;
        });
        QVERIFY(!reports.empty());
        for (size_t i = 1; i < reports.size(); ++i)
            QVERIFY2(reports[i].first >= reports[i - 1].first && reports[i].first <= 1.0,
                     qPrintable(QString("%1 after %2 at %3")
                                    .arg(reports[i].first)
                                    .arg(reports[i - 1].first)
                                    .arg(QString::fromStdString(reports[i].second))));
        auto firstOf = [&](const std::string& prefix) {
            for (const auto& [f, m] : reports)
                if (m.rfind(prefix, 0) == 0)
                    return f;
            return -1.0;
        };
        auto advance = [&](const std::string& layer) {
            const double begin = firstOf(layer + " alone: "), end = firstOf("all but " + layer);
            return begin >= 0 && end >= 0 ? end - begin : -1.0;
        };
        double block[2] = {0, 0}, head = 0;
        std::vector<const qs::ModuleNode*> nodes;
        const qs::ModuleNode tree = qs::openModelHandle(m_model.toStdString()).moduleTree();
        tree.collect("linear", nodes);
        for (const qs::ModuleNode* n : nodes)
            if (n->blockIndex >= 0)
                block[n->blockIndex] += double(n->shape[0]) * double(n->shape[1]);
        nodes.clear();
        tree.collect("head", nodes);
        QCOMPARE(int(nodes.size()), 1);
        head = double(nodes[0]->shape[0]) * double(nodes[0]->shape[1]);
        const double first = advance(m_layers.front()), last = advance(m_layers.back());
        QVERIFY(first > 0 && last > 0);
        const double want = (block[0] + block[1] + head) / (block[1] + head);
        QVERIFY2(std::abs(first / last - want) <= 1e-9 * want,
                 qPrintable(QString("ratio %1, work %2").arg(first / last).arg(want)));
    }

    // `analyze --sensitivity` (runJob with both): the analysis and the study share the bar by
    // their work, in the study's unit (run/StudyWork.h), so the study starts where the analysis's
    // share ends: A / (A + S), A = 3 passes of the calibration tokens through the blocks (two
    // streams and each layer's local output), S = the study's calibration, its two reference
    // evaluations and two per row, each from the row's block through the head. Half each (as
    // before) gave the study, several times longer, half the bar.
    void analysisAndStudyShareProgressByWork() {
        qs::RunRequest req = request("int8", "float");
        req.analyze = true;
        req.sensitivity = true;
        std::vector<std::pair<double, std::string>> reports;
        const qs::RunOutcome out = qs::runJob(req, [&](double f, const std::string& m) {
            reports.emplace_back(f, m);
            return true;
        });
        QVERIFY(out.sensitivity);
        for (size_t i = 1; i < reports.size(); ++i)
            QVERIFY2(reports[i].first >= reports[i - 1].first,
                     qPrintable(QString::fromStdString(reports[i].second)));
        double studyStart = -1;
        for (const auto& [f, m] : reports)
            if (m.rfind("calibration: ", 0) == 0) {
                studyStart = f;
                break;
            }
        QVERIFY(studyStart > 0);

        double block[2] = {0, 0}, head = 0;
        std::vector<const qs::ModuleNode*> nodes;
        const qs::ModuleNode tree = qs::openModelHandle(m_model.toStdString()).moduleTree();
        tree.collect("linear", nodes);
        for (const qs::ModuleNode* n : nodes)
            if (n->blockIndex >= 0)
                block[n->blockIndex] += double(n->shape[0]) * double(n->shape[1]);
        nodes.clear();
        tree.collect("head", nodes);
        head = double(nodes[0]->shape[0]) * double(nodes[0]->shape[1]);
        const double calibTokens = 4 * 32, evalTokens = 5 * 48;
        const double analysis = 3 * calibTokens * (block[0] + block[1]);
        const double rowsPerBlock = double(m_layers.size()) / 2;
        const double study = calibTokens * (block[0] + block[1]) +
                             2 * evalTokens * (block[0] + block[1] + head) +
                             rowsPerBlock * 2 * evalTokens * (block[0] + block[1] + head) +
                             rowsPerBlock * 2 * evalTokens * (block[1] + head);
        const double want = analysis / (analysis + study);
        QVERIFY2(std::abs(studyStart - want) <= 1e-9,
                 qPrintable(
                     QString("the study starts at %1, its work at %2").arg(studyStart).arg(want)));
    }

    // A recipe that quantizes no layer (every one excluded) has nothing to measure: refused before
    // any block is computed, whether the study runs alone (the GUI's Sensitivity) or after an
    // analysis (the CLI's analyze --sensitivity); it used to come after the calibration, or after
    // the whole analysis.
    void nothingToMeasureIsRefusedBeforeAnyWork() {
        for (const bool analyze : {false, true}) {
            qs::RunRequest req = request("int8", "float");
            req.recipe.exclude.push_back("*");
            req.analyze = analyze;
            req.sensitivity = true;
            double furthest = 0;
            std::string message, blockRead;
            try {
                qs::runJob(req, [&](double f, const std::string& m) {
                    furthest = std::max(furthest, f);
                    if (m.find("block ") != std::string::npos && blockRead.empty())
                        blockRead = m;
                    return true;
                });
            } catch (const qs::Error& e) {
                message = e.what();
            }
            QVERIFY2(message.find("nothing to measure") != std::string::npos, message.c_str());
            // No block was read (the pipeline reports each one it loads), nothing counted done.
            QVERIFY2(blockRead.empty(), qPrintable(QStringLiteral("analyze %1: %2")
                                                       .arg(analyze)
                                                       .arg(QString::fromStdString(blockRead))));
            QCOMPARE(furthest, 0.0);
        }
    }

    void emptyRecipeIsRefused() {
        qs::RunRequest req = request("int8", "float");
        req.recipe.global.reset();
        QVERIFY_THROWS_EXCEPTION(qs::Error, qs::runSensitivity(req));
    }
};

QS_TEST_GUILESS_MAIN(TestSensitivityRun)
#include "tst_sensitivityrun.moc"
