// WorkbenchPage: the layer tree, depth chart and layer detail working together. Hand-made
// reports check the wiring (chart click → tree selection → detail), the plots' series, the
// quantization grid against its formula and the context menu; one test runs the real qs::Engine
// Analyze on stories260K and checks the tree against the reports the engine streamed.
#include "DepthChart.h"
#include "LayerDetailView.h"
#include "LayerFixtures.h"
#include "LayerTreeModel.h"
#include "LayerTreePanel.h"
#include "ModelSummaryView.h"
#include "ModuleFilterProxyModel.h"
#include "PlotWidget.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "WorkbenchPage.h"

#include "engine/Engine.h"
#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"
#include "recipe/Provenance.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QBrush>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSignalSpy>
#include <QTreeView>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

using qs::LayerTreeModel;
using qs::PlotWidget;
using namespace qs::test;

namespace {

constexpr int kBlocks = 3;

qs::ModelInfo fixtureInfo() {
    qs::ModelInfo info;
    info.directory = "/nonexistent/fixture";
    info.family = "llama";
    info.architecture = "LlamaForCausalLM";
    info.tree = fixtureTree(kBlocks);
    return info;
}

int seriesNamed(const PlotWidget* plot, const QString& name) {
    for (int i = 0; i < plot->seriesCount(); ++i)
        if (plot->series()[size_t(i)].name == name)
            return i;
    return -1;
}

} // namespace

class TestWorkbenchPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    // A model that stores quantized weights: the summary names the format and counts the
    // stored schemes, the tree shows each layer's; opening a float model clears both.
    void storedQuantizationShown() {
        qs::WorkbenchPage page;
        qs::ModelInfo info = fixtureInfo();
        info.sourceFile = "/nonexistent/fixture.gguf";
        info.stored.format = "GGUF v3";
        for (int b = 0; b < kBlocks; ++b)
            for (const std::string& kind : fixtureKinds())
                info.stored.layers[fixtureLayer(b, kind)] = kind == "down_proj" ? "F32" : "Q4_0";
        page.setModel(info);
        QCOMPARE(page.summary()->value(QStringLiteral("Stored quantization")),
                 QStringLiteral("GGUF v3"));
        QCOMPARE(page.summary()->value(QStringLiteral("Layers")),
                 QStringLiteral("3 \u00d7 F32, 9 \u00d7 Q4_0"));
        QCOMPARE(page.summary()->value(QStringLiteral("Opened from")),
                 QStringLiteral("/nonexistent/fixture.gguf"));
        const QString q = QString::fromStdString(fixtureLayer(1, "q_proj"));
        QCOMPARE(page.layerValue(q, LayerTreeModel::SchemeColumn).toString(),
                 QStringLiteral("Q4_0 (stored)"));
        page.setModel(fixtureInfo());
        QVERIFY(page.summary()->value(QStringLiteral("Stored quantization")).isEmpty());
        QCOMPARE(page.layerValue(q, LayerTreeModel::SchemeColumn).toString(),
                 QStringLiteral("\u2014"));
    }

    void depthChartClickSelectsTheLayer() {
        qs::WorkbenchPage page;
        QAbstractItemModelTester tester(page.layerTree()->filterModel(),
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        page.setModel(fixtureInfo());
        for (int b = 0; b < kBlocks; ++b)
            page.addLayerReports(fixtureBlock(b));
        const PlotWidget* plot = page.depthChart()->plot();
        QCOMPARE(page.depthChart()->metricColumn(),
                 int(LayerTreeModel::OutputSqnrAccumulatedColumn));
        // One series per linear kind, one point per block, y = the reported value.
        QCOMPARE(plot->seriesCount(), int(fixtureKinds().size()));
        const int down = seriesNamed(plot, QStringLiteral("down_proj"));
        QVERIFY(down >= 0);
        const PlotWidget::Series& s = plot->series()[size_t(down)];
        QCOMPARE(s.x.size(), kBlocks);
        for (int b = 0; b < kBlocks; ++b) {
            QCOMPARE(s.x[b], double(b));
            QCOMPARE(s.y[b], fixtureReport(b, 3).outputAccumulated.sqnrDb);
        }

        QSignalSpy selected(&page, &qs::WorkbenchPage::layerSelected);
        page.depthChart()->plot()->clickPoint(down, 1);
        const QString expected = QString::fromStdString(fixtureLayer(1, "down_proj"));
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected[0][0].toString(), expected);
        QCOMPARE(page.selectedLayer(), expected);
        QCOMPARE(page.layerTree()
                     ->treeView()
                     ->currentIndex()
                     .data(qs::ModuleTreeModel::FullNameRole)
                     .toString(),
                 expected);
        QCOMPARE(page.layerDetail()->layerName(), expected);
        // The chart marks the selection with one extra series that selects nothing.
        QCOMPARE(plot->seriesCount(), int(fixtureKinds().size()) + 1);
        QCOMPARE(plot->series().back().y.front(), fixtureReport(1, 3).outputAccumulated.sqnrDb);

        // Another metric: the same layer's outlier score.
        page.depthChart()->setMetricColumn(LayerTreeModel::OutlierScoreColumn);
        const int down2 = seriesNamed(page.depthChart()->plot(), QStringLiteral("down_proj"));
        QCOMPARE(page.depthChart()->plot()->series()[size_t(down2)].y[2],
                 fixtureReport(2, 3).outlierScore);

        // A selection hidden by the filter clears the filter rather than selecting nothing.
        page.layerTree()->filterEdit()->setText(QStringLiteral("*q_proj"));
        page.selectLayer(QString::fromStdString(fixtureLayer(2, "up_proj")));
        QCOMPARE(page.selectedLayer(), QString::fromStdString(fixtureLayer(2, "up_proj")));
        QVERIFY(page.layerTree()->filterEdit()->text().isEmpty());
    }

    void layerDetailShowsTheSelectedLayer() {
        qs::WorkbenchPage page;
        page.setModel(fixtureInfo());
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        page.setRecipe(recipe);
        page.addLayerReports(fixtureBlock(0));
        const qs::LayerReport r = fixtureReport(0, 3); // down_proj: 32 input channels
        page.selectLayer(QString::fromStdString(r.name));
        const qs::LayerDetailView* detail = page.layerDetail();
        QCOMPARE(detail->layerName(), QString::fromStdString(r.name));

        const PlotWidget* channels = detail->channelPlot();
        QCOMPARE(channels->seriesCount(), 3); // min/max band, absmax, percentile
        for (const PlotWidget::Series& s : channels->series())
            QCOMPARE(s.x.size(), int(r.input.absmax.size()));
        const PlotWidget::Series& band = channels->series()[0];
        QCOMPARE(band.type, PlotWidget::SeriesType::Band);
        QCOMPARE(band.y[3], double(r.input.min[3]));
        QCOMPARE(band.upper[3], double(r.input.max[3]));
        QCOMPARE(channels->series()[1].y[3], double(r.input.absmax[3]));
        QCOMPARE(channels->series()[2].y[5], double(r.input.percentile[5]));
        // Log scale: the signed band has no logarithm and goes; absmax and percentile stay.
        page.layerDetail()->logScaleBox()->setChecked(true);
        QVERIFY(channels->isLogY());
        QCOMPARE(channels->seriesCount(), 2);
        QCOMPARE(channels->series()[0].y[3], double(r.input.absmax[3]));

        QCOMPARE(detail->tokenPlot()->seriesCount(), 1);
        QCOMPARE(detail->tokenPlot()->series()[0].y.size(), int(r.input.tokenAbsmax.size()));

        const PlotWidget* acts = detail->activationHistogram();
        QCOMPARE(acts->seriesCount(), 2);
        QCOMPARE(acts->series()[0].y.size(), int(r.input.histogram.counts.size()));
        QCOMPARE(acts->series()[1].y[10], double(r.input.quantizedHistogram.counts[10]));
        // Bin centres over [lo, hi].
        const double width =
            (r.input.histogram.hi - r.input.histogram.lo) / double(r.input.histogram.counts.size());
        QCOMPARE(acts->series()[0].x[0], r.input.histogram.lo + width / 2);

        const PlotWidget* weights = detail->weightHistogram();
        QCOMPARE(weights->seriesCount(), 2);
        QCOMPARE(weights->series()[1].y[64], double(r.weightQuantizedHistogram.counts[64]));
        // int8 per tensor: 256 levels, too dense to draw all; every 4th is drawn.
        QVERIFY(weights->verticalLineCount() > 0);
        QVERIFY(weights->note().contains(QLatin1String("int8")));
    }

    // Issue 9: results computed under an older recipe are marked stale in the tree (greyed
    // values, tooltip, header), the depth chart and the layer detail; the recipe they were
    // computed under, set again, makes them current.
    void resultsUnderAnOlderRecipeAreStale() {
        qs::WorkbenchPage page;
        page.setModel(fixtureInfo());
        page.show();
        LayerTreeModel* model = page.layerTree()->model();
        QAbstractItemModelTester tester(model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        qs::Recipe analyzed;
        analyzed.global = qs::quant::resolveScheme("int8");
        page.setRecipe(analyzed);
        model->setReportsRecipeHash(qs::recipeHash(analyzed));
        page.addLayerReports(fixtureBlock(0));
        const qs::LayerReport r = fixtureReport(0, 3);
        page.selectLayer(QString::fromStdString(r.name));
        QSignalSpy stale(model, &LayerTreeModel::resultsStaleChanged);
        QVERIFY(!model->resultsStale());

        qs::Recipe edited = analyzed;
        edited.exclude.push_back("*down_proj");
        page.setRecipe(edited);
        QCOMPARE(stale.count(), 1);
        QVERIFY(model->resultsStale());
        const QModelIndex layer = model->indexOf(QString::fromStdString(r.name))
                                      .siblingAtColumn(LayerTreeModel::WeightSqnrColumn);
        QVERIFY(layer.isValid());
        QCOMPARE(layer.data(Qt::ForegroundRole).value<QBrush>().color(), QColor(Qt::gray));
        QVERIFY(!layer.data(Qt::BackgroundRole).isValid()); // no heat: not a current result
        QVERIFY(layer.data(Qt::ToolTipRole).toString().contains(QStringLiteral("Stale")));
        QVERIFY(model->headerData(LayerTreeModel::WeightSqnrColumn, Qt::Horizontal)
                    .toString()
                    .endsWith(QStringLiteral("(stale)")));
        QTRY_VERIFY(page.depthChart()->staleLabel()->isVisible());
        QTRY_VERIFY(page.layerDetail()->staleLabel()->isVisible());

        page.setRecipe(analyzed); // undo: the results match the recipe again
        QCOMPARE(stale.count(), 2);
        QVERIFY(!model->resultsStale());
        QVERIFY(layer.data(Qt::BackgroundRole).isValid());
        QVERIFY(!page.depthChart()->staleLabel()->isVisible());
        QVERIFY(!page.layerDetail()->staleLabel()->isVisible());

        // No results, nothing stale (a new model or a cleared analysis).
        page.setRecipe(edited);
        page.clearLayerReports();
        QVERIFY(!model->resultsStale());
    }

    void weightGridFollowsTheFormula() {
        // int4 per tensor, symmetric: s = absmax / ((qmax - qmin) / 2) = 0.6 / 7.5 = 0.08 for a
        // weight in [-0.3, 0.6]; levels q in [-8, 7] with q * s inside the range: q = -3 .. 7.
        qs::quant::QuantScheme scheme;
        scheme.name = "int4_per_tensor_test";
        scheme.weight = qs::quant::QuantSpec::defaults(qs::quant::DataType::Int4);
        QVERIFY(scheme.weight.granularity == qs::quant::Granularity::PerTensor);
        QVERIFY(scheme.weight.symmetric);
        const qs::Histogram w{-0.3, 0.6, std::vector<int64_t>(128, 1)};
        const auto grid = qs::LayerDetailView::weightGrid(w, scheme);
        QCOMPARE(grid.scale, 0.6 / 7.5);
        QCOMPARE(grid.levelStep, 1);
        QCOMPARE(grid.lines.size(), 11);
        QCOMPARE(grid.lines.front(), -3 * (0.6 / 7.5));
        QCOMPARE(grid.lines.back(), 7 * (0.6 / 7.5));

        // Per-group int4: no single grid, say so.
        const auto grouped =
            qs::LayerDetailView::weightGrid(w, qs::quant::resolveScheme("int4_wo_128"));
        QVERIFY(grouped.lines.isEmpty());
        QVERIFY2(grouped.note.contains(QLatin1String("grid varies per channel/group")),
                 qPrintable(grouped.note));
        // Not quantized: no grid.
        QVERIFY(qs::LayerDetailView::weightGrid(w, std::nullopt).lines.isEmpty());
    }

    void contextMenuOnLinearsOnly() {
        qs::WorkbenchPage page;
        page.setModel(fixtureInfo());
        QSignalSpy exclude(&page, &qs::WorkbenchPage::excludeLayerRequested);
        QSignalSpy overrideSpy(&page, &qs::WorkbenchPage::overrideLayerRequested);
        const QString q = QString::fromStdString(fixtureLayer(1, "q_proj"));
        std::unique_ptr<QMenu> menu(page.layerTree()->createContextMenu(q, &page));
        QVERIFY(menu);
        auto* excludeAction = menu->findChild<QAction*>(QStringLiteral("excludeLayerAction"));
        auto* overrideAction = menu->findChild<QAction*>(QStringLiteral("overrideSchemeAction"));
        QVERIFY(excludeAction && overrideAction);
        excludeAction->trigger();
        overrideAction->trigger();
        QCOMPARE(exclude.count(), 1);
        QCOMPARE(exclude[0][0].toString(), q);
        QCOMPARE(overrideSpy.count(), 1);
        QCOMPARE(overrideSpy[0][0].toString(), q);
        QVERIFY(!page.layerTree()->createContextMenu(QStringLiteral("model.layers.1.mlp"), &page));
        // Already excluded: the action is there but disabled.
        qs::Recipe recipe;
        recipe.exclude = {q.toStdString()};
        page.setRecipe(recipe);
        std::unique_ptr<QMenu> again(page.layerTree()->createContextMenu(q, &page));
        QVERIFY(!again->findChild<QAction*>(QStringLiteral("excludeLayerAction"))->isEnabled());
    }

    void sensitivityColumn() {
        qs::WorkbenchPage page;
        page.setModel(fixtureInfo());
        page.setSensitivity({fixtureLayer(0, "k_proj"), 17.25, 16.0});
        QCOMPARE(page.layerValue(QString::fromStdString(fixtureLayer(0, "k_proj")),
                                 LayerTreeModel::SensitivityColumn)
                     .toDouble(),
                 17.25);
    }

    void realAnalyzeFillsTheTree() {
        const QString modelDir = sharedPath(QStringLiteral("models/stories260K"));
        qs::Engine engine;
        qs::Job* open = engine.openModel(modelDir);
        QSignalSpy opened(open, &qs::Job::modelOpened);
        QSignalSpy failed(open, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1 || failed.count() == 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));

        qs::WorkbenchPage page;
        QAbstractItemModelTester tester(page.layerTree()->filterModel(),
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        page.setModel(opened[0][0].value<qs::ModelInfo>());
        qs::RunRequest request;
        request.analyze = true;
        request.recipe.global = qs::quant::resolveScheme("int8");
        request.recipe.calibration.dataPath =
            sharedPath(QStringLiteral("data/tinystories-calib.txt")).toStdString();
        request.recipe.calibration.numSamples = 8;
        request.recipe.calibration.seqLen = 128;
        page.setRecipe(request.recipe);

        std::vector<qs::LayerReport> received;
        int batches = 0;
        qs::Job* run = engine.run(request);
        connect(run, &qs::Job::layerReports, &page,
                [&](int, const std::vector<qs::LayerReport>& layers) {
                    ++batches;
                    received.insert(received.end(), layers.begin(), layers.end());
                    page.addLayerReports(layers);
                });
        QSignalSpy finished(run, &qs::Job::runFinished);
        QSignalSpy runFailed(run, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1 || runFailed.count() == 1, 300000);
        QVERIFY2(runFailed.isEmpty(),
                 runFailed.isEmpty() ? "" : qPrintable(runFailed[0][0].toString()));
        QVERIFY(batches > 1); // streamed per block
        QVERIFY(!received.empty());
        QCOMPARE(page.layerTreeModel()->reportCount(), int(received.size()));

        int checked = 0;
        for (const qs::LayerReport& r : received) {
            const QString name = QString::fromStdString(r.name);
            if (!page.layerTreeModel()->indexOf(name).isValid())
                continue;
            ++checked;
            QCOMPARE(page.layerValue(name, LayerTreeModel::OutlierScoreColumn).toDouble(),
                     r.outlierScore);
            QCOMPARE(page.layerValue(name, LayerTreeModel::InputAbsmaxColumn).toDouble(),
                     r.inputAbsmax);
            if (r.weight.valid && std::isfinite(r.weight.sqnrDb))
                QCOMPARE(page.layerValue(name, LayerTreeModel::WeightSqnrColumn).toDouble(),
                         r.weight.sqnrDb);
            if (r.outputAccumulated.valid && std::isfinite(r.outputAccumulated.sqnrDb))
                QCOMPARE(
                    page.layerValue(name, LayerTreeModel::OutputSqnrAccumulatedColumn).toDouble(),
                    r.outputAccumulated.sqnrDb);
            if (r.quantized)
                QCOMPARE(page.layerValue(name, LayerTreeModel::SchemeColumn).toString(),
                         QString::fromStdString(r.scheme));
        }
        QCOMPARE(checked, int(received.size()));
        // The detail view of a real layer: one absmax point per input channel.
        const qs::LayerReport& first = received.front();
        page.selectLayer(QString::fromStdString(first.name));
        QCOMPARE(page.layerDetail()->layerName(), QString::fromStdString(first.name));
        const auto& series = page.layerDetail()->channelPlot()->series();
        QVERIFY(!series.empty());
        QCOMPARE(series.back().x.size(), int(first.input.absmax.size()));
        QCOMPARE(qint64(first.input.absmax.size()), qint64(first.shape.at(1)));
        // QS_SCREENSHOT_DIR=/tmp/x: also render the page with this real analysis (for looking
        // at the plots; asserts nothing more).
        const QString shots = qEnvironmentVariable("QS_SCREENSHOT_DIR");
        if (!shots.isEmpty()) {
            page.resize(1600, 1000);
            page.show();
            page.resetLayout(page.size());
            page.selectLayer(QString::fromStdString(received[received.size() / 2].name));
            QTest::qWait(200);
            QVERIFY(page.grab().save(shots + QStringLiteral("/workbench-page.png")));
            QVERIFY(page.layerDetail()->grab().save(shots + QStringLiteral("/layer-detail.png")));
            QVERIFY(page.depthChart()->grab().save(shots + QStringLiteral("/depth-chart.png")));
        }
        qInfo("stories260K: %d layers in %d batches; %s outlier score %.4f, weight SQNR %.3f dB",
              int(received.size()), batches, first.name.c_str(), first.outlierScore,
              first.weight.sqnrDb);
    }

    // Issue 11: after Analyze with SmoothQuant the layer detail plots each smoothed layer's
    // input absmax and weight absmax per input channel before and after it (two graphs each,
    // with a legend); a layer without such ranges hides the two plots.
    void smoothQuantAnalyzeShowsRangesBeforeAndAfter() {
        qs::Engine engine;
        qs::Job* open = engine.openModel(sharedPath(QStringLiteral("models/stories260K")));
        QSignalSpy opened(open, &qs::Job::modelOpened);
        QSignalSpy failed(open, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1 || failed.count() == 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));

        qs::WorkbenchPage page;
        QAbstractItemModelTester tester(page.layerTree()->filterModel(),
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        page.setModel(opened[0][0].value<qs::ModelInfo>());
        qs::RunRequest request;
        request.analyze = true;
        request.recipe.global = qs::quant::resolveScheme("int8");
        request.recipe.algorithms.push_back({"smoothquant", {{"alpha", 0.5}}});
        request.recipe.calibration.dataPath =
            sharedPath(QStringLiteral("data/tinystories-calib.txt")).toStdString();
        request.recipe.calibration.numSamples = 4;
        request.recipe.calibration.seqLen = 128;
        page.setRecipe(request.recipe);
        std::vector<qs::LayerReport> received;
        qs::Job* run = engine.run(request);
        connect(run, &qs::Job::layerReports, &page,
                [&](int, const std::vector<qs::LayerReport>& layers) {
                    received.insert(received.end(), layers.begin(), layers.end());
                    page.addLayerReports(layers);
                });
        QSignalSpy finished(run, &qs::Job::runFinished);
        QSignalSpy runFailed(run, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1 || runFailed.count() == 1, 300000);
        QVERIFY2(runFailed.isEmpty(),
                 runFailed.isEmpty() ? "" : qPrintable(runFailed[0][0].toString()));

        page.show();
        const auto q = std::find_if(received.begin(), received.end(),
                                    [](const qs::LayerReport& r) { return r.kind == "q_proj"; });
        QVERIFY(q != received.end() && q->ranges.valid());
        page.selectLayer(QString::fromStdString(q->name));
        const qs::LayerDetailView* detail = page.layerDetail();
        QCOMPARE(detail->layerName(), QString::fromStdString(q->name));
        const std::pair<const PlotWidget*, const std::vector<float>*> expected[] = {
            {detail->inputRangesPlot(), &q->input.absmax},
            {detail->weightRangesPlot(), &q->ranges.weightAbsmaxAfter}};
        for (const auto& [plot, after] : expected) {
            QVERIFY(plot->isVisibleTo(&page));
            QCOMPARE(plot->seriesCount(), 2);
            QVERIFY(plot->title().contains(QLatin1String("SmoothQuant")));
            const int was = seriesNamed(plot, QStringLiteral("before SmoothQuant"));
            const int now = seriesNamed(plot, QStringLiteral("after"));
            QVERIFY(was >= 0 && now >= 0);
            QCOMPARE(plot->series()[size_t(was)].y.size(), 64); // stories260K's hidden size
            QCOMPARE(plot->series()[size_t(now)].y.size(), 64);
            QCOMPARE(plot->series()[size_t(now)].y[7], double((*after)[7]));
        }
        QCOMPARE(detail->inputRangesPlot()->series()[0].y[7],
                 double(q->ranges.inputAbsmaxBefore[7]));
        QCOMPARE(detail->weightRangesPlot()->series()[0].y[7],
                 double(q->ranges.weightAbsmaxBefore[7]));
        // The log-scale box applies to these plots too (outliers span decades).
        page.layerDetail()->logScaleBox()->setChecked(true);
        QVERIFY(detail->inputRangesPlot()->isLogY());
        QCOMPARE(detail->inputRangesPlot()->seriesCount(), 2);

        // A hand-made layer without ranges: the two plots go.
        page.addLayerReports(fixtureBlock(0));
        page.selectLayer(QString::fromStdString(fixtureReport(0, 3).name));
        QVERIFY(!detail->inputRangesPlot()->isVisibleTo(&page));
        QVERIFY(!detail->weightRangesPlot()->isVisibleTo(&page));
        QCOMPARE(detail->inputRangesPlot()->seriesCount(), 0);

        // QS_SCREENSHOT_DIR=/tmp/x: also render the detail of the smoothed layer.
        const QString shots = qEnvironmentVariable("QS_SCREENSHOT_DIR");
        if (!shots.isEmpty()) {
            page.layerDetail()->logScaleBox()->setChecked(false);
            page.selectLayer(QString::fromStdString(q->name));
            page.resize(1600, 1200);
            page.resetLayout(page.size());
            QTest::qWait(200);
            QVERIFY(page.layerDetail()->grab().save(
                shots + QStringLiteral("/layer-detail-smoothquant.png")));
        }
    }
};

QS_TEST_MAIN(TestWorkbenchPage)
#include "tst_workbenchpage.moc"
