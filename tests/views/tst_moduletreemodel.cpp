// ModuleTreeModel and ModuleFilterProxyModel over a hand-built module tree, checked with
// QAbstractItemModelTester (Fatal) and against counts and names computed from the tree itself.
#include "ModuleFilterProxyModel.h"
#include "ModuleTreeModel.h"
#include "TestMain.h"

#include <QAbstractItemModelTester>
#include <QLocale>
#include <QSignalSpy>
#include <QtTest>

#include <functional>
#include <numeric>

using qs::ModuleFilterProxyModel;
using qs::ModuleNode;
using qs::ModuleTreeModel;

namespace {

ModuleNode leaf(const std::string& name, const std::string& kind, std::vector<int64_t> shape,
                int block = -1) {
    ModuleNode n;
    n.name = name;
    n.kind = kind;
    n.shape = std::move(shape);
    n.dtype = "F32";
    n.parameters =
        std::accumulate(n.shape.begin(), n.shape.end(), int64_t{1}, std::multiplies<int64_t>());
    n.blockIndex = block;
    return n;
}

ModuleNode group(const std::string& name, const std::string& kind, std::vector<ModuleNode> children,
                 int block = -1) {
    ModuleNode n;
    n.name = name;
    n.kind = kind;
    n.blockIndex = block;
    n.children = std::move(children);
    for (const ModuleNode& c : n.children)
        n.parameters += c.parameters;
    return n;
}

// A Llama-shaped tree: embedding, `blocks` decoder blocks (attention + MLP + norms), norm, head.
ModuleNode llamaTree(int blocks, int64_t hidden = 64, int64_t inter = 172, int64_t vocab = 512) {
    std::vector<ModuleNode> top;
    top.push_back(leaf("model.embed_tokens", "embedding", {vocab, hidden}));
    for (int b = 0; b < blocks; ++b) {
        const std::string p = "model.layers." + std::to_string(b);
        top.push_back(
            group(p, "block",
                  {leaf(p + ".input_layernorm", "norm", {hidden}, b),
                   group(p + ".self_attn", "attention",
                         {leaf(p + ".self_attn.q_proj", "linear", {hidden, hidden}, b),
                          leaf(p + ".self_attn.k_proj", "linear", {hidden / 2, hidden}, b),
                          leaf(p + ".self_attn.v_proj", "linear", {hidden / 2, hidden}, b),
                          leaf(p + ".self_attn.o_proj", "linear", {hidden, hidden}, b)},
                         b),
                   leaf(p + ".post_attention_layernorm", "norm", {hidden}, b),
                   group(p + ".mlp", "mlp",
                         {leaf(p + ".mlp.gate_proj", "linear", {inter, hidden}, b),
                          leaf(p + ".mlp.up_proj", "linear", {inter, hidden}, b),
                          leaf(p + ".mlp.down_proj", "linear", {hidden, inter}, b)},
                         b)},
                  b));
    }
    top.push_back(leaf("model.norm", "norm", {hidden}));
    top.push_back(leaf("lm_head", "head", {vocab, hidden}));
    return group("model", "model", std::move(top));
}

int countNodes(const ModuleNode& n) {
    int total = 0;
    for (const ModuleNode& c : n.children)
        total += 1 + countNodes(c);
    return total;
}

// Full names of every row of `model` under `parent`, depth first.
void collectNames(const QAbstractItemModel& model, const QModelIndex& parent, QStringList& out) {
    for (int r = 0; r < model.rowCount(parent); ++r) {
        const QModelIndex index = model.index(r, 0, parent);
        out << index.data(ModuleTreeModel::FullNameRole).toString();
        collectNames(model, index, out);
    }
}

QModelIndex proxyIndexOf(const QAbstractItemModel& model, const QString& fullName,
                         const QModelIndex& parent = {}) {
    for (int r = 0; r < model.rowCount(parent); ++r) {
        const QModelIndex index = model.index(r, 0, parent);
        if (index.data(ModuleTreeModel::FullNameRole).toString() == fullName)
            return index;
        const QModelIndex hit = proxyIndexOf(model, fullName, index);
        if (hit.isValid())
            return hit;
    }
    return {};
}

} // namespace

class TestModuleTreeModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void modelTesterOnModel() {
        ModuleTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        model.setTree(llamaTree(3));
        model.setTree(llamaTree(5));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        model.setTree(llamaTree(2));
        QVERIFY(model.rowCount() > 0);
    }

    void modelTesterOnProxy() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        model.setTree(llamaTree(4));
        QVERIFY(proxy.setNamePattern(QStringLiteral("*q_proj")));
        QVERIFY(proxy.setNamePattern(QStringLiteral("mlp")));
        QVERIFY(proxy.setNamePattern(QString()));
        model.setTree(llamaTree(12));
        QVERIFY(proxy.setNamePattern(QStringLiteral("layers.1?.*")));
        proxy.sort(ModuleTreeModel::ParametersColumn, Qt::DescendingOrder);
        model.clear();
        QCOMPARE(proxy.rowCount(), 0);
    }

    void rowCountsFollowTheTree() {
        const ModuleNode tree = llamaTree(3);
        ModuleTreeModel model;
        model.setTree(tree);
        QCOMPARE(model.columnCount(), int(ModuleTreeModel::ColumnCount));
        QCOMPARE(model.rowCount(), int(tree.children.size())); // root itself is not a row
        QCOMPARE(model.nodeCount(), countNodes(tree));
        for (int r = 0; r < model.rowCount(); ++r) {
            const QModelIndex top = model.index(r, 0);
            const ModuleNode& node = tree.children[size_t(r)];
            QCOMPARE(top.data(ModuleTreeModel::FullNameRole).toString(),
                     QString::fromStdString(node.name));
            QCOMPARE(model.rowCount(top), int(node.children.size()));
            QVERIFY(!model.parent(top).isValid());
            for (int c = 0; c < model.rowCount(top); ++c)
                QCOMPARE(model.parent(model.index(c, 0, top)), top);
        }
        QStringList names;
        collectNames(model, {}, names);
        QCOMPARE(names.size(), countNodes(tree));
        QCOMPARE(names.first(), QStringLiteral("model.embed_tokens"));
        QCOMPARE(names.last(), QStringLiteral("lm_head"));
    }

    void dataOfALinearLeaf() {
        ModuleTreeModel model;
        model.setTree(llamaTree(2, 4096, 11008, 32000));
        const QModelIndex q = model.indexOf(QStringLiteral("model.layers.1.self_attn.q_proj"));
        QVERIFY(q.isValid());
        auto cell = [&](int column, int role = Qt::DisplayRole) {
            return model.index(q.row(), column, q.parent()).data(role);
        };
        QCOMPARE(cell(ModuleTreeModel::NameColumn).toString(), QStringLiteral("q_proj"));
        QCOMPARE(cell(ModuleTreeModel::KindColumn).toString(), QStringLiteral("linear"));
        QCOMPARE(cell(ModuleTreeModel::ShapeColumn).toString(), QStringLiteral("[4096, 4096]"));
        QCOMPARE(cell(ModuleTreeModel::DTypeColumn).toString(), QStringLiteral("F32"));
        // 4096 * 4096 = 16,777,216 with the C locale's comma separators.
        QCOMPARE(cell(ModuleTreeModel::ParametersColumn).toString(), QStringLiteral("16,777,216"));
        QCOMPARE(
            cell(ModuleTreeModel::ParametersColumn, ModuleTreeModel::ParametersRole).toLongLong(),
            4096LL * 4096LL);
        const auto align =
            cell(ModuleTreeModel::ParametersColumn, Qt::TextAlignmentRole).value<Qt::Alignment>();
        QVERIFY(align & Qt::AlignRight);
        for (int c = 0; c < ModuleTreeModel::ColumnCount; ++c)
            QCOMPARE(cell(c, Qt::ToolTipRole).toString(),
                     QStringLiteral("model.layers.1.self_attn.q_proj"));
        QCOMPARE(cell(0, ModuleTreeModel::BlockIndexRole).toInt(), 1);
        QCOMPARE(model.headerData(ModuleTreeModel::ParametersColumn, Qt::Horizontal).toString(),
                 QStringLiteral("Parameters"));
    }

    void dataOfAGroup() {
        ModuleTreeModel model;
        model.setTree(llamaTree(2, 64, 172, 512));
        const QModelIndex block = model.indexOf(QStringLiteral("model.layers.0"));
        QVERIFY(block.isValid());
        QCOMPARE(block.data().toString(), QStringLiteral("layers.0")); // relative to "model"
        QCOMPARE(block.data(ModuleTreeModel::KindRole).toString(), QStringLiteral("block"));
        // Block parameters: 2 norms + q,o (64x64) + k,v (32x64) + 3 MLP (172x64).
        const qlonglong expected = 2 * 64 + 2 * 64 * 64 + 2 * 32 * 64 + 3 * 172 * 64;
        QCOMPARE(block.data(ModuleTreeModel::ParametersRole).toLongLong(), expected);
        QCOMPARE(model.index(block.row(), ModuleTreeModel::ParametersColumn).data().toString(),
                 QStringLiteral("45,440"));
        QCOMPARE(model.index(block.row(), ModuleTreeModel::ShapeColumn).data().toString(),
                 QString()); // groups have no weight shape
        // A name outside the parent's prefix is shown in full.
        const QModelIndex head = model.indexOf(QStringLiteral("lm_head"));
        QCOMPARE(head.data().toString(), QStringLiteral("lm_head"));
        QVERIFY(!model.indexOf(QStringLiteral("model.layers.7")).isValid());
    }

    // A mixture-of-experts layer: router and experts; the experts row counts them and gives each
    // one's parameters, and views leave it collapsed.
    void expertsRowSummarisesTheExperts() {
        std::vector<ModuleNode> experts;
        const std::string p = "model.layers.0.mlp";
        for (int e = 0; e < 3; ++e) {
            const std::string x = p + ".experts." + std::to_string(e);
            experts.push_back(group(x, "expert",
                                    {leaf(x + ".gate_proj", "linear", {32, 64}, 0),
                                     leaf(x + ".up_proj", "linear", {32, 64}, 0),
                                     leaf(x + ".down_proj", "linear", {64, 32}, 0)},
                                    0));
        }
        ModuleNode moe = group(p, "moe",
                               {leaf(p + ".gate", "router", {3, 64}, 0),
                                group(p + ".experts", "experts", std::move(experts), 0)},
                               0);
        ModuleTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::Fatal);
        model.setTree(group("model", "model", {group("model.layers.0", "block", {moe}, 0)}));
        const QModelIndex row = model.indexOf(QStringLiteral("model.layers.0.mlp.experts"));
        QVERIFY(row.isValid());
        QCOMPARE(model.rowCount(row), 3);
        QCOMPARE(row.siblingAtColumn(ModuleTreeModel::ShapeColumn).data().toString(),
                 QStringLiteral("3 \u00d7 6,144"));
        QCOMPARE(row.data(ModuleTreeModel::ParametersRole).toLongLong(), qlonglong(3 * 6144));
        QVERIFY(
            ModuleTreeModel::collapsedByDefault(row.data(ModuleTreeModel::KindRole).toString()));
        QVERIFY(!ModuleTreeModel::collapsedByDefault(QStringLiteral("moe")));
        const QModelIndex expert = model.indexOf(QStringLiteral("model.layers.0.mlp.experts.1"));
        QCOMPARE(expert.siblingAtColumn(ModuleTreeModel::ParametersColumn).data().toString(),
                 QStringLiteral("6,144"));
    }

    void filterKeepsParentsOfMatches() {
        const int blocks = 4;
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(blocks));
        QVERIFY(proxy.setNamePattern(QStringLiteral("*q_proj")));
        // Top level: only the blocks (parents of matches); embedding, norm and head are gone.
        QCOMPARE(proxy.rowCount(), blocks);
        for (int b = 0; b < blocks; ++b) {
            const QModelIndex block = proxy.index(b, 0);
            QCOMPARE(block.data(ModuleTreeModel::FullNameRole).toString(),
                     QStringLiteral("model.layers.%1").arg(b));
            QCOMPARE(proxy.rowCount(block), 1); // self_attn only
            const QModelIndex attn = proxy.index(0, 0, block);
            QCOMPARE(attn.data().toString(), QStringLiteral("self_attn"));
            QCOMPARE(proxy.rowCount(attn), 1);
            QCOMPARE(proxy.index(0, 0, attn).data(ModuleTreeModel::FullNameRole).toString(),
                     QStringLiteral("model.layers.%1.self_attn.q_proj").arg(b));
        }
        QStringList names;
        collectNames(proxy, {}, names);
        QCOMPARE(names.size(), blocks * 3);
    }

    void filterIsCaseInsensitiveAndUnanchored() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(3));
        QVERIFY(proxy.setNamePattern(QStringLiteral("DOWN_PROJ")));
        QStringList names;
        collectNames(proxy, {}, names);
        QCOMPARE(names.filter(QStringLiteral("down_proj")).size(), 3);
        QVERIFY(proxyIndexOf(proxy, QStringLiteral("model.layers.2.mlp")).isValid());
        QVERIFY(!proxyIndexOf(proxy, QStringLiteral("model.layers.2.mlp.up_proj")).isValid());
    }

    void filterQuestionMarkMatchesOneCharacter() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(12));
        QVERIFY(proxy.setNamePattern(QStringLiteral("layers.1?.mlp.up*")));
        QStringList names;
        collectNames(proxy, {}, names);
        QCOMPARE(names.filter(QStringLiteral("up_proj")),
                 QStringList({QStringLiteral("model.layers.10.mlp.up_proj"),
                              QStringLiteral("model.layers.11.mlp.up_proj")}));
    }

    void matchedModuleKeepsItsChildren() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(3));
        QVERIFY(proxy.setNamePattern(QStringLiteral("*.mlp")));
        const QModelIndex mlp = proxyIndexOf(proxy, QStringLiteral("model.layers.1.mlp"));
        QVERIFY(mlp.isValid());
        QCOMPARE(proxy.rowCount(mlp), 3);
    }

    void emptyPatternShowsEverything() {
        const ModuleNode tree = llamaTree(3);
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(tree);
        QVERIFY(proxy.setNamePattern(QStringLiteral("nothing-matches-this")));
        QCOMPARE(proxy.rowCount(), 0);
        QVERIFY(proxy.setNamePattern(QStringLiteral("   ")));
        QStringList names;
        collectNames(proxy, {}, names);
        QCOMPARE(names.size(), countNodes(tree));
    }

    void invalidPatternShowsNothing() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(2));
        QVERIFY(!proxy.setNamePattern(QStringLiteral("[q_proj")));
        QVERIFY(!proxy.isPatternValid());
        QCOMPARE(proxy.rowCount(), 0);
        QVERIFY(proxy.setNamePattern(QStringLiteral("[qk]_proj")));
        QStringList names;
        collectNames(proxy, {}, names);
        QCOMPARE(names.filter(QStringLiteral("_proj")).size(), 2 * 2);
    }

    void sortByParameters() {
        ModuleTreeModel model;
        ModuleFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        model.setTree(llamaTree(2));
        proxy.sort(ModuleTreeModel::ParametersColumn, Qt::DescendingOrder);
        const QModelIndex mlp = proxyIndexOf(proxy, QStringLiteral("model.layers.0.self_attn"));
        QVERIFY(mlp.isValid());
        qlonglong previous = std::numeric_limits<qlonglong>::max();
        for (int r = 0; r < proxy.rowCount(mlp); ++r) {
            const qlonglong p =
                proxy.index(r, 0, mlp).data(ModuleTreeModel::ParametersRole).toLongLong();
            QVERIFY(p <= previous);
            previous = p;
        }
        // Sorting by name keeps the model's order: layers.10 after layers.9, not after layers.1.
        model.setTree(llamaTree(11));
        proxy.sort(ModuleTreeModel::NameColumn, Qt::AscendingOrder);
        QStringList top;
        for (int r = 0; r < proxy.rowCount(); ++r)
            top << proxy.index(r, 0).data(ModuleTreeModel::FullNameRole).toString();
        QCOMPARE(top.indexOf(QStringLiteral("model.layers.10")),
                 top.indexOf(QStringLiteral("model.layers.9")) + 1);
    }

    void resetSignalsOnSetTree() {
        ModuleTreeModel model;
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.setTree(llamaTree(1));
        model.clear();
        QCOMPARE(reset.count(), 2);
    }
};

QS_TEST_MAIN(TestModuleTreeModel)
#include "tst_moduletreemodel.moc"
