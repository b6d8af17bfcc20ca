// The layer tree as the GUI shows it, fed by the real engine: stories260K opened through
// qs::Engine (no Torch in this file), its module tree shown in a LayerTreePanel, and the filter
// line edit driving the view. Expected shapes come from the model's own config.json.
#include "LayerTreePanel.h"
#include "ModelSummaryView.h"
#include "ModuleFilterProxyModel.h"
#include "ModuleTreeModel.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "engine/Engine.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QLocale>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTreeView>
#include <QtTest>

#include <functional>

using qs::ModuleTreeModel;

namespace {

QJsonObject readConfig(const QString& directory) {
    QFile file(directory + QStringLiteral("/config.json"));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file.fileName()));
    return QJsonDocument::fromJson(file.readAll()).object();
}

QString cell(const QModelIndex& index, int column) {
    return index.sibling(index.row(), column).data().toString();
}

} // namespace

class TestLayerTreePanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QLocale::setDefault(QLocale::c());
        m_directory = qs::test::sharedPath(QStringLiteral("models/stories260K"));
        m_config = readConfig(m_directory);
        qs::Engine engine;
        qs::Job* open = engine.openModel(m_directory);
        QSignalSpy opened(open, &qs::Job::modelOpened);
        QSignalSpy failed(open, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1 || failed.count() == 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
        m_info = opened[0][0].value<qs::ModelInfo>();
    }

    void treeShowsTheAttentionProjections() {
        qs::LayerTreePanel panel;
        QAbstractItemModelTester tester(panel.filterModel(),
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        panel.setTree(m_info.tree);
        const ModuleTreeModel* model = panel.model();
        const int hidden = m_config.value(QStringLiteral("hidden_size")).toInt();
        const int kvHeads = m_config.value(QStringLiteral("num_key_value_heads")).toInt();
        const int heads = m_config.value(QStringLiteral("num_attention_heads")).toInt();
        QCOMPARE(hidden, 64);

        const QModelIndex q = model->indexOf(QStringLiteral("model.layers.0.self_attn.q_proj"));
        QVERIFY(q.isValid());
        QCOMPARE(cell(q, ModuleTreeModel::ShapeColumn), QStringLiteral("[64, 64]"));
        QCOMPARE(cell(q, ModuleTreeModel::KindColumn), QStringLiteral("linear"));
        QCOMPARE(cell(q, ModuleTreeModel::DTypeColumn), QStringLiteral("F32"));
        QCOMPARE(q.data(ModuleTreeModel::ParametersRole).toLongLong(), qlonglong(hidden) * hidden);
        QCOMPARE(cell(q, ModuleTreeModel::ParametersColumn), QStringLiteral("4,096"));

        const QModelIndex k = model->indexOf(QStringLiteral("model.layers.4.self_attn.k_proj"));
        QVERIFY(k.isValid());
        QCOMPARE(cell(k, ModuleTreeModel::ShapeColumn),
                 QStringLiteral("[%1, %2]").arg(hidden / heads * kvHeads).arg(hidden));
        QVERIFY(!model->indexOf(QStringLiteral("model.layers.5")).isValid());
    }

    // Issue 28: the names stay in view while the metric columns scroll sideways: the frozen
    // Name column lies over the tree's left edge, as wide as the tree's, with the same rows
    // open and in the same place.
    void nameColumnStaysWhileMetricsScroll() {
        qs::LayerTreePanel panel;
        panel.resize(500, 400); // narrower than the columns: the tree scrolls sideways
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setTree(m_info.tree);
        QTreeView* tree = panel.treeView();
        QTreeView* names = panel.frozenNameView();
        QVERIFY(names->isVisible());
        QTRY_COMPARE(names->columnWidth(0), tree->columnWidth(0));
        QScrollBar* sideways = tree->horizontalScrollBar();
        QVERIFY(sideways->maximum() > 0);
        sideways->setValue(sideways->maximum());
        QCOMPARE(names->geometry().left(), tree->frameWidth()); // stays at the left edge
        const QModelIndex q = panel.filterModel()->mapFromSource(
            panel.model()->indexOf(QStringLiteral("model.layers.0.self_attn.q_proj")));
        QVERIFY(q.isValid());
        QCOMPARE(names->visualRect(q).top(), tree->visualRect(q).top());
        QVERIFY(!names->visualRect(q).isEmpty());
        // Filtering opens every branch (expandAll signals nothing per row): mirrored too.
        panel.filterEdit()->setText(QStringLiteral("*down_proj"));
        const QModelIndex down = panel.filterModel()->mapFromSource(
            panel.model()->indexOf(QStringLiteral("model.layers.4.mlp.down_proj")));
        QVERIFY(down.isValid());
        QVERIFY(names->isExpanded(down.parent()));
        tree->verticalScrollBar()->setValue(tree->verticalScrollBar()->maximum());
        QCOMPARE(names->visualRect(down).top(), tree->visualRect(down).top());
        // Selecting in the names selects the tree's row.
        names->setCurrentIndex(down);
        QCOMPARE(panel.currentModule(), QStringLiteral("model.layers.4.mlp.down_proj"));
    }

    void filterEditShowsOneProjectionPerLayer() {
        qs::LayerTreePanel panel;
        panel.setTree(m_info.tree);
        panel.filterEdit()->setText(QStringLiteral("*q_proj"));
        const QAbstractItemModel* proxy = panel.filterModel();
        const int layers = m_config.value(QStringLiteral("num_hidden_layers")).toInt();
        int leaves = 0;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int r = 0; r < proxy->rowCount(parent); ++r) {
                const QModelIndex index = proxy->index(r, 0, parent);
                if (proxy->rowCount(index) == 0) {
                    ++leaves;
                    QVERIFY(index.data(ModuleTreeModel::FullNameRole)
                                .toString()
                                .endsWith(QLatin1String("q_proj")));
                    // Filtering expands the tree so every match is on screen.
                    QVERIFY(panel.treeView()->isExpanded(parent));
                }
                walk(index);
            }
        };
        walk({});
        QCOMPARE(leaves, layers);
        panel.filterEdit()->clear();
        QCOMPARE(panel.model()->nodeCount() > leaves, true);
        QVERIFY(panel.filterModel()->isPatternValid());
    }

    void currentModuleSignal() {
        qs::LayerTreePanel panel;
        panel.setTree(m_info.tree);
        QSignalSpy changed(&panel, &qs::LayerTreePanel::currentModuleChanged);
        const QModelIndex source =
            panel.model()->indexOf(QStringLiteral("model.layers.2.mlp.down_proj"));
        panel.treeView()->setCurrentIndex(panel.filterModel()->mapFromSource(source));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed[0][0].toString(), QStringLiteral("model.layers.2.mlp.down_proj"));
        QCOMPARE(panel.currentModule(), QStringLiteral("model.layers.2.mlp.down_proj"));
    }

    void summaryShowsTheConfig() {
        qs::ModelSummaryView summary;
        summary.setModelInfo(m_info);
        QCOMPARE(summary.value(QStringLiteral("Architecture")),
                 m_config.value(QStringLiteral("architectures")).toArray().at(0).toString());
        QCOMPARE(summary.value(QStringLiteral("Family")),
                 m_config.value(QStringLiteral("model_type")).toString());
        QCOMPARE(summary.value(QStringLiteral("Files")), QStringLiteral("model.safetensors"));
        // checkpointBytes is the size of the safetensors files on disk.
        const qint64 bytes = QFileInfo(m_directory + QStringLiteral("/model.safetensors")).size();
        QString grouped = QString::number(bytes);
        for (int i = grouped.size() - 3; i > 0; i -= 3)
            grouped.insert(i, QLatin1Char(','));
        QVERIFY2(summary.value(QStringLiteral("Size on disk"))
                     .contains(QStringLiteral("(%1 bytes)").arg(grouped)),
                 qPrintable(summary.value(QStringLiteral("Size on disk"))));
        QCOMPARE(summary.value(QStringLiteral("hidden_size")), QStringLiteral("64"));
    }

    // A mixture-of-experts checkpoint: router and experts in the tree, the experts collapsed;
    // a shared expert (Qwen1.5-MoE, DeepSeek-V3) shown beside them, and Qwen1.5-MoE's
    // shared-expert gate as a node of its own.
    void expertsStartCollapsed_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("moe");    // the first MoE layer's module
        QTest::addColumn<QString>("shared"); // its shared expert ("": none)
        QTest::addColumn<QString>("sharedGate");
        QTest::newRow("qwen3_moe") << "qwen3_moe"
                                   << "model.layers.0.mlp"
                                   << ""
                                   << "";
        QTest::newRow("qwen2_moe") << "qwen2_moe"
                                   << "model.layers.0.mlp"
                                   << "model.layers.0.mlp.shared_expert"
                                   << "model.layers.0.mlp.shared_expert_gate";
        QTest::newRow("deepseek_v3") << "deepseek_v3"
                                     << "model.layers.1.mlp"
                                     << "model.layers.1.mlp.shared_experts"
                                     << "";
    }

    void expertsStartCollapsed() {
        QFETCH(QString, folder);
        QFETCH(QString, moe);
        QFETCH(QString, shared);
        QFETCH(QString, sharedGate);
        qs::Engine engine;
        qs::Job* open = engine.openModel(
            qs::test::sharedPath(QStringLiteral("models/tiny-families/") + folder));
        QSignalSpy opened(open, &qs::Job::modelOpened);
        QSignalSpy failed(open, &qs::Job::failed);
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() == 1 || failed.count() == 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
        qs::LayerTreePanel panel;
        panel.setTree(opened[0][0].value<qs::ModelInfo>().tree);
        const auto shown = [&](const QString& name) {
            return panel.filterModel()->mapFromSource(panel.model()->indexOf(name));
        };
        // the first block opens whole (DeepSeek-V3's is dense: its MoE block stays closed)
        QCOMPARE(panel.treeView()->isExpanded(shown(moe)),
                 moe.startsWith(QStringLiteral("model.layers.0.")));
        QVERIFY(shown(moe + ".gate").isValid());
        QVERIFY(!panel.treeView()->isExpanded(shown(moe + ".experts")));
        // 4 experts of gate, up and down at 64 x 64
        QCOMPARE(cell(panel.model()->indexOf(moe + ".experts"), ModuleTreeModel::ShapeColumn),
                 QStringLiteral("4 \u00d7 12,288"));
        if (!shared.isEmpty())
            QVERIFY(shown(shared + ".down_proj").isValid());
        if (!sharedGate.isEmpty())
            QVERIFY(shown(sharedGate).isValid());
    }

private:
    QString m_directory;
    QJsonObject m_config;
    qs::ModelInfo m_info;
};

QS_TEST_MAIN(TestLayerTreePanel)
#include "tst_layertreepanel.moc"
