// LayerTreeModel (module tree + recipe + streamed LayerReports) and its filter/sort proxy:
// QAbstractItemModelTester (Fatal) while reports stream in, values equal to the reports passed
// in, worst-of-children on blocks, numeric sorting with absent values last, filtering, heat
// colours ordered from worst (red) to best (green), and rows touched per batch.
#include "LayerFixtures.h"
#include "LayerTreeModel.h"
#include "ModuleFilterProxyModel.h"
#include "TestMain.h"

#include "quant/SchemeRegistry.h"
#include "recipe/Provenance.h"

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QColor>
#include <QSignalSpy>
#include <QtTest>

#include <cmath>
#include <functional>
#include <limits>

using qs::LayerTreeModel;
using qs::ModuleFilterProxyModel;
using qs::ModuleTreeModel;
using namespace qs::test;

namespace {

constexpr int kBlocks = 3;

QString layer(int block, const std::string& kind) {
    return QString::fromStdString(fixtureLayer(block, kind));
}

// Names of the rows under `parent` of a proxy, in the proxy's order.
QStringList childNames(const QAbstractItemModel* model, const QModelIndex& parent) {
    QStringList names;
    for (int r = 0; r < model->rowCount(parent); ++r)
        names << model->index(r, 0, parent).data(ModuleTreeModel::FullNameRole).toString();
    return names;
}

QModelIndex proxyIndexOf(const ModuleFilterProxyModel& proxy, const LayerTreeModel& model,
                         const QString& name, int column = 0) {
    const QModelIndex source = model.indexOf(name);
    return proxy.mapFromSource(source.sibling(source.row(), column));
}

} // namespace

class TestLayerTreeModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void testerWhileStreaming() {
        LayerTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester sourceTester(
            &model, QAbstractItemModelTester::FailureReportingMode::Fatal);
        QAbstractItemModelTester proxyTester(&proxy,
                                             QAbstractItemModelTester::FailureReportingMode::Fatal);
        // A live sort on a metric column and a filter: every batch re-sorts and re-filters.
        proxy.sort(LayerTreeModel::OutputSqnrAccumulatedColumn, Qt::DescendingOrder);
        proxy.setNamePattern(QStringLiteral("*proj"));
        model.setTree(fixtureTree(kBlocks));
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        recipe.exclude = {"*down_proj"};
        model.setRecipe(recipe);
        for (int b = 0; b < kBlocks; ++b) {
            model.addLayerReports(fixtureBlock(b));
            QCOMPARE(model.reportCount(), 4 * (b + 1));
            // Layers of later blocks have no value yet.
            if (b + 1 < kBlocks)
                QVERIFY(!model.layerValue(layer(b + 1, "q_proj"), LayerTreeModel::WeightSqnrColumn)
                             .isValid());
            QCOMPARE(
                model.layerValue(layer(b, "q_proj"), LayerTreeModel::WeightSqnrColumn).toDouble(),
                fixtureReport(b, 0).weight.sqnrDb);
        }
        model.setSensitivity({fixtureLayer(1, "k_proj"), 12.5, 11.0, 0.25, 0.75, 0.0, 0.0});
        QCOMPARE(model.layerValue(layer(1, "k_proj"), LayerTreeModel::SensitivityColumn).toDouble(),
                 12.5);
        QCOMPARE(model.layerValue(layer(1, "k_proj"), LayerTreeModel::KlAloneColumn).toDouble(),
                 0.25);
        proxy.setNamePattern(QString());
        model.clearLayerReports();
        QCOMPARE(model.reportCount(), 0);
        QVERIFY(!model.layerValue(layer(0, "q_proj"), LayerTreeModel::WeightSqnrColumn).isValid());
        // The sensitivity is a different run's result and stays.
        QCOMPARE(model.layerValue(layer(1, "k_proj"), LayerTreeModel::SensitivityColumn).toDouble(),
                 12.5);
        QCOMPARE(model.layerValue(layer(1, "k_proj"), LayerTreeModel::KlAloneColumn).toDouble(),
                 0.25);
        model.addLayerReports(fixtureBlock(0));
        model.setTree(fixtureTree(2)); // reports of layers still present are kept
        QCOMPARE(
            model.layerValue(layer(0, "up_proj"), LayerTreeModel::InputAbsmaxColumn).toDouble(),
            fixtureReport(0, 2).inputAbsmax);
        model.clear();
    }

    void unfitSkippedLayersSayItWhileTheirRecipeStands() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        model.setTree(fixtureTree(kBlocks));
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        recipe.unfitPolicy = "skip";
        model.setRecipe(recipe);
        const QString down = layer(1, "down_proj"), up = layer(1, "up_proj");
        const auto schemeCell = [&](const QString& name, int role = Qt::DisplayRole) {
            const QModelIndex i = model.indexOf(name);
            return i.sibling(i.row(), LayerTreeModel::SchemeColumn).data(role).toString();
        };
        const QString plain = schemeCell(down);
        QVERIFY(!plain.contains("unfit"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        // As the run's outcome lists them (LayerPlanner): "layer: reason".
        model.setUnfitSkipped({down.toStdString() + ": weight group size 3 does not divide 32"},
                              qs::recipeHash(recipe));
        QVERIFY(!changed.isEmpty());
        QCOMPARE(schemeCell(down), "unfit, not " + plain);
        const QString tip = schemeCell(down, Qt::ToolTipRole);
        QVERIFY2(tip.contains("left this layer unquantized") &&
                     tip.contains("weight group size 3 does not divide 32"),
                 qPrintable(tip));
        QVERIFY(!schemeCell(up).contains("unfit")); // a layer that fits keeps its scheme
        // Another recipe: the last run's skips no longer describe it.
        qs::Recipe other = recipe;
        other.global = qs::quant::resolveScheme("int4_wo_32");
        model.setRecipe(other);
        QVERIFY(!schemeCell(down).contains("unfit"));
        model.setRecipe(recipe); // back to the recipe that ran
        QVERIFY(schemeCell(down).contains("unfit"));
        model.setUnfitSkipped({}, qs::recipeHash(recipe));
        QCOMPARE(schemeCell(down), plain);
    }

    void layerValueIsTheReportedNumber() {
        LayerTreeModel model;
        model.setTree(fixtureTree(kBlocks));
        std::vector<qs::LayerReport> batch = fixtureBlock(1);
        batch[2].weight.sqnrDb = std::numeric_limits<double>::infinity(); // exact weight
        batch[3].outputAccumulated.valid = false;                         // not measured
        model.addLayerReports(batch);
        for (const qs::LayerReport& r : batch) {
            const QString name = QString::fromStdString(r.name);
            QCOMPARE(model.layerValue(name, LayerTreeModel::WeightSqnrColumn).toDouble(),
                     r.weight.sqnrDb);
            QCOMPARE(model.layerValue(name, LayerTreeModel::OutputSqnrLocalColumn).toDouble(),
                     r.outputLocal.sqnrDb);
            QCOMPARE(model.layerValue(name, LayerTreeModel::InputAbsmaxColumn).toDouble(),
                     r.inputAbsmax);
            QCOMPARE(model.layerValue(name, LayerTreeModel::OutlierScoreColumn).toDouble(),
                     r.outlierScore);
            QCOMPARE(model.layerValue(name, LayerTreeModel::MeanRelativeErrorColumn).toDouble(),
                     r.outputLocal.meanRelative);
            QCOMPARE(model.layerValue(name, LayerTreeModel::KlProxyColumn).toDouble(), r.klProxy);
            if (r.outputAccumulated.valid)
                QCOMPARE(
                    model.layerValue(name, LayerTreeModel::OutputSqnrAccumulatedColumn).toDouble(),
                    r.outputAccumulated.sqnrDb);
            else
                QVERIFY(
                    !model.layerValue(name, LayerTreeModel::OutputSqnrAccumulatedColumn).isValid());
        }
        const QModelIndex up = model.indexOf(layer(1, "up_proj"));
        QCOMPARE(up.siblingAtColumn(LayerTreeModel::WeightSqnrColumn).data().toString(),
                 QStringLiteral("\u221e"));
        QCOMPARE(up.siblingAtColumn(LayerTreeModel::OutlierScoreColumn).data().toString(),
                 QString::number(batch[2].outlierScore, 'f', 2));
    }

    void blocksShowTheWorstOfTheirLayers() {
        LayerTreeModel model;
        model.setTree(fixtureTree(kBlocks));
        for (int b = 0; b < kBlocks; ++b)
            model.addLayerReports(fixtureBlock(b));
        for (int b = 0; b < kBlocks; ++b) {
            double minSqnr = 1e300, maxOutlier = -1e300;
            for (const qs::LayerReport& r : fixtureBlock(b)) {
                minSqnr = std::min(minSqnr, r.weight.sqnrDb);
                maxOutlier = std::max(maxOutlier, r.outlierScore);
            }
            const QString block = QStringLiteral("model.layers.%1").arg(b);
            QCOMPARE(model.layerValue(block, LayerTreeModel::WeightSqnrColumn).toDouble(), minSqnr);
            QCOMPARE(model.layerValue(block, LayerTreeModel::OutlierScoreColumn).toDouble(),
                     maxOutlier);
        }
        // The attention node only sees q_proj and k_proj.
        const double attn = std::min(fixtureReport(2, 0).outputLocal.sqnrDb,
                                     fixtureReport(2, 1).outputLocal.sqnrDb);
        QCOMPARE(model
                     .layerValue(QStringLiteral("model.layers.2.self_attn"),
                                 LayerTreeModel::OutputSqnrLocalColumn)
                     .toDouble(),
                 attn);
        // Nothing below the norm or the head: no value.
        QVERIFY(!model.layerValue(QStringLiteral("model.norm"), LayerTreeModel::WeightSqnrColumn)
                     .isValid());
    }

    void sortsNumericallyWithAbsentLast() {
        LayerTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(fixtureTree(kBlocks));
        for (int b = 0; b < kBlocks; ++b)
            model.addLayerReports(fixtureBlock(b));
        // Sort the blocks by their worst outlier score (5.75, 9.50, 13.25: "13.25" < "5.75" as
        // text, so a string sort would fail).
        const QModelIndex modelRow = proxy.index(0, 0);
        QCOMPARE(modelRow.data(ModuleTreeModel::FullNameRole).toString(), QStringLiteral("model"));
        for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
            proxy.sort(LayerTreeModel::OutlierScoreColumn, order);
            const QModelIndex top = proxy.index(0, 0);
            QStringList names = childNames(&proxy, top);
            // model.norm has no value: last in both orders.
            QCOMPARE(names.last(), QStringLiteral("model.norm"));
            std::vector<double> values;
            for (int r = 0; r < proxy.rowCount(top) - 1; ++r)
                values.push_back(proxy.index(r, LayerTreeModel::OutlierScoreColumn, top)
                                     .data(LayerTreeModel::ValueRole)
                                     .toDouble());
            QCOMPARE(int(values.size()), kBlocks);
            for (size_t i = 1; i < values.size(); ++i)
                QVERIFY2(order == Qt::AscendingOrder ? values[i - 1] <= values[i]
                                                     : values[i - 1] >= values[i],
                         qPrintable(QString::number(values[i - 1]) + QLatin1Char(' ') +
                                    QString::number(values[i])));
        }
        // Inside one MLP: down_proj (k = 1) before up_proj (k = 2) by ascending outlier score.
        proxy.sort(LayerTreeModel::OutlierScoreColumn, Qt::AscendingOrder);
        const QModelIndex mlp = proxyIndexOf(proxy, model, QStringLiteral("model.layers.2.mlp"));
        QCOMPARE(childNames(&proxy, mlp),
                 QStringList({layer(2, "down_proj"), layer(2, "up_proj")}));
        // Sorting by name restores the model's order.
        proxy.sort(ModuleTreeModel::NameColumn, Qt::AscendingOrder);
        QCOMPARE(childNames(&proxy, proxy.index(0, 0)).first(), QStringLiteral("model.layers.0"));
        // (Proxy indexes do not survive a re-sort: look the MLP up again.)
        const QModelIndex mlpAgain =
            proxyIndexOf(proxy, model, QStringLiteral("model.layers.2.mlp"));
        QCOMPARE(childNames(&proxy, mlpAgain),
                 QStringList({layer(2, "up_proj"), layer(2, "down_proj")}));
    }

    void filterKeepsParents() {
        LayerTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(fixtureTree(kBlocks));
        model.addLayerReports(fixtureBlock(0));
        QVERIFY(proxy.setNamePattern(QStringLiteral("*down_proj")));
        int leaves = 0;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int r = 0; r < proxy.rowCount(parent); ++r) {
                const QModelIndex i = proxy.index(r, 0, parent);
                if (proxy.rowCount(i) == 0) {
                    ++leaves;
                    QVERIFY(i.data(ModuleTreeModel::FullNameRole)
                                .toString()
                                .endsWith(QLatin1String("down_proj")));
                    QCOMPARE(i.parent().data(ModuleTreeModel::KindRole).toString(),
                             QStringLiteral("mlp"));
                }
                walk(i);
            }
        };
        walk({});
        QCOMPARE(leaves, kBlocks);
    }

    void heatColoursGoFromWorstRedToBestGreen() {
        LayerTreeModel model;
        model.setTree(fixtureTree(kBlocks));
        model.addLayerReports(fixtureBlock(0));
        model.addLayerReports(fixtureBlock(1)); // block 2 stays unreported
        auto heat = [&](int block, const std::string& kind, int column) {
            return model.indexOf(layer(block, kind))
                .siblingAtColumn(column)
                .data(Qt::BackgroundRole)
                .value<QBrush>()
                .color();
        };
        // SQNR: lower is worse. Block 1 k_proj has the lowest weight SQNR (35 dB), block 0
        // q_proj the highest (40 dB), block 0 down_proj lies between (39 dB).
        const QColor worst = heat(1, "k_proj", LayerTreeModel::WeightSqnrColumn);
        const QColor best = heat(0, "q_proj", LayerTreeModel::WeightSqnrColumn);
        const QColor mid = heat(0, "down_proj", LayerTreeModel::WeightSqnrColumn);
        QVERIFY(worst.isValid() && best.isValid() && mid.isValid());
        QVERIFY(fixtureReport(1, 1).weight.sqnrDb < fixtureReport(0, 3).weight.sqnrDb);
        QVERIFY(fixtureReport(0, 3).weight.sqnrDb < fixtureReport(0, 0).weight.sqnrDb);
        QVERIFY2(
            worst.hue() < mid.hue() && mid.hue() < best.hue(),
            qPrintable(QStringLiteral("%1 %2 %3").arg(worst.hue()).arg(mid.hue()).arg(best.hue())));
        QCOMPARE(worst.hue(), 0);  // the minimum of the column is pure red
        QCOMPARE(best.hue(), 120); // the maximum pure green
        // Outlier score: higher is worse, so the highest score is the reddest.
        const QColor highScore = heat(1, "k_proj", LayerTreeModel::OutlierScoreColumn);
        const QColor lowScore = heat(0, "q_proj", LayerTreeModel::OutlierScoreColumn);
        QVERIFY(fixtureReport(1, 1).outlierScore > fixtureReport(0, 0).outlierScore);
        QVERIFY(highScore.hue() < lowScore.hue());
        // Unreported layers and non-metric columns carry no colour.
        QVERIFY(!model.indexOf(layer(2, "q_proj"))
                     .siblingAtColumn(LayerTreeModel::WeightSqnrColumn)
                     .data(Qt::BackgroundRole)
                     .isValid());
        QVERIFY(!model.indexOf(layer(0, "q_proj")).data(Qt::BackgroundRole).isValid());
    }

    void batchAnnouncesOnlyItsRowsAndAncestors() {
        LayerTreeModel model;
        model.setTree(fixtureTree(kBlocks));
        model.addLayerReports(fixtureBlock(0));
        model.addLayerReports(fixtureBlock(1));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.addLayerReports(fixtureBlock(2));
        QVERIFY(!changed.isEmpty());
        const QStringList ancestors = {QStringLiteral("model"), QStringLiteral("model.layers.2"),
                                       QStringLiteral("model.layers.2.self_attn"),
                                       QStringLiteral("model.layers.2.mlp")};
        int valueSignals = 0;
        for (const QList<QVariant>& args : changed) {
            const QModelIndex topLeft = args[0].toModelIndex();
            const QModelIndex bottomRight = args[1].toModelIndex();
            const QList<int> roles = args[2].value<QList<int>>();
            if (roles == QList<int>{Qt::BackgroundRole})
                continue; // the colour scale moved: colours anywhere may change
            ++valueSignals;
            QCOMPARE(topLeft.row(), bottomRight.row());
            const QString name = topLeft.data(ModuleTreeModel::FullNameRole).toString();
            QVERIFY2(name.startsWith(QLatin1String("model.layers.2.")) || ancestors.contains(name),
                     qPrintable(name));
        }
        QCOMPARE(valueSignals, 4 + ancestors.size());
    }

    void schemeAndExcludedFollowTheRecipe() {
        LayerTreeModel model;
        model.setTree(fixtureTree(1));
        QCOMPARE(model.layerValue(layer(0, "q_proj"), LayerTreeModel::SchemeColumn).toString(),
                 QStringLiteral("\u2014")); // no recipe yet
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        recipe.layerTypeOverrides["q_proj"] = qs::quant::resolveScheme("int4_wo_128");
        recipe.exclude = {"*down_proj"};
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.setRecipe(recipe);
        QVERIFY(!changed.isEmpty());
        QCOMPARE(model.layerValue(layer(0, "q_proj"), LayerTreeModel::SchemeColumn).toString(),
                 QStringLiteral("int4_wo_128"));
        QCOMPARE(model.layerValue(layer(0, "k_proj"), LayerTreeModel::SchemeColumn).toString(),
                 QStringLiteral("int8"));
        QCOMPARE(model.layerValue(layer(0, "down_proj"), LayerTreeModel::ExcludedColumn).toBool(),
                 true);
        QCOMPARE(model.layerValue(layer(0, "up_proj"), LayerTreeModel::ExcludedColumn).toBool(),
                 false);
        QVERIFY(model.layerValue(layer(0, "down_proj"), LayerTreeModel::SchemeColumn)
                    .toString()
                    .startsWith(QLatin1String("none")));
        QCOMPARE(model.indexOf(layer(0, "down_proj"))
                     .siblingAtColumn(LayerTreeModel::ExcludedColumn)
                     .data()
                     .toString(),
                 QStringLiteral("\u2713"));
        // Non-linears get a dash, lm_head too: the engine never quantizes it.
        QCOMPARE(
            model.layerValue(QStringLiteral("lm_head"), LayerTreeModel::SchemeColumn).toString(),
            QStringLiteral("\u2014"));
        QCOMPARE(
            model.layerValue(QStringLiteral("model.layers.0.mlp"), LayerTreeModel::SchemeColumn)
                .toString(),
            QStringLiteral("\u2014"));
    }

    // An opened checkpoint that stores quantized weights (a Quark export, a GGUF file): the
    // column shows what is stored while the recipe quantizes nothing, the recipe's scheme once
    // it does, and the tooltip always names what is stored.
    void storedSchemesShowUntilTheRecipeQuantizes() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        qs::StoredSchemes stored;
        stored.format = "AMD Quark hf_format, real quantized (pack reorder)";
        for (const char* kind : {"q_proj", "k_proj", "up_proj"})
            stored.layers[layer(0, kind).toStdString()] = "uint4 g32";
        stored.layers[layer(0, "down_proj").toStdString()] = qs::StoredSchemes::kStoredFloat;
        stored.layers["lm_head"] = qs::StoredSchemes::kStoredFloat;
        model.setTree(fixtureTree(1));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.setStoredSchemes(stored);
        QVERIFY(!changed.isEmpty());
        auto schemeOf = [&](const QString& name) {
            return model.layerValue(name, LayerTreeModel::SchemeColumn).toString();
        };
        QVERIFY(model.showsStoredSchemes()); // no recipe at all
        QCOMPARE(schemeOf(layer(0, "q_proj")), QStringLiteral("uint4 g32 (stored)"));
        QCOMPARE(schemeOf(layer(0, "down_proj")), QStringLiteral("float (stored)"));
        QCOMPARE(schemeOf(QStringLiteral("lm_head")), QStringLiteral("float (stored)"));
        QCOMPARE(schemeOf(QStringLiteral("model.layers.0.mlp")), QStringLiteral("\u2014"));

        model.setRecipe(qs::Recipe{}); // quantizes nothing: the stored schemes run
        QVERIFY(model.showsStoredSchemes());
        QCOMPARE(schemeOf(layer(0, "k_proj")), QStringLiteral("uint4 g32 (stored)"));
        const QModelIndex q =
            model.indexOf(layer(0, "q_proj")).siblingAtColumn(LayerTreeModel::SchemeColumn);
        QVERIFY2(q.data(Qt::ToolTipRole).toString().contains(QLatin1String("as they are")),
                 qPrintable(q.data(Qt::ToolTipRole).toString()));

        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        model.setRecipe(recipe);
        QVERIFY(!model.showsStoredSchemes());
        QCOMPARE(schemeOf(layer(0, "q_proj")), QStringLiteral("int8"));
        QCOMPARE(schemeOf(QStringLiteral("lm_head")), QStringLiteral("\u2014"));
        const QString tip = q.data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QLatin1String("stored as uint4 g32")) &&
                     tip.contains(QLatin1String("again")),
                 qPrintable(tip));

        model.setStoredSchemes({}); // another model, a float one
        model.setRecipe(qs::Recipe{});
        QCOMPARE(schemeOf(layer(0, "q_proj")), QStringLiteral("none"));
        QCOMPARE(q.data(Qt::ToolTipRole).toString(), layer(0, "q_proj"));
    }
};

QS_TEST_MAIN(TestLayerTreeModel)
#include "tst_layertreemodel.moc"
