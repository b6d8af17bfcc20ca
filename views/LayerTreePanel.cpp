#include "LayerTreePanel.h"

#include "DisplayFormat.h"
#include "FrozenNameColumn.h"
#include "LayerTreeModel.h"
#include "ModuleFilterProxyModel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QTreeView>
#include <QVBoxLayout>

#include <utility>

namespace qs {

namespace {

// Counts the rows under `parent` (recursively) that the proxy lets through.
int visibleRows(const QAbstractItemModel* model, const QModelIndex& parent) {
    int n = 0;
    const int rows = model->rowCount(parent);
    for (int r = 0; r < rows; ++r)
        n += 1 + visibleRows(model, model->index(r, 0, parent));
    return n;
}

} // namespace

LayerTreePanel::LayerTreePanel(QWidget* parent)
    : QWidget(parent), m_model(new LayerTreeModel(this)), m_proxy(new ModuleFilterProxyModel(this)),
      m_filter(new QLineEdit(this)), m_count(new QLabel(this)), m_view(new QTreeView(this)) {
    m_proxy->setSourceModel(m_model);

    m_filter->setPlaceholderText(tr("Filter modules by name (wildcards * and ?), e.g. *q_proj"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setToolTip(tr("Case-insensitive wildcard on the full module name; the parents of "
                            "matching modules stay visible."));
    connect(m_filter, &QLineEdit::textChanged, this, &LayerTreePanel::applyFilter);

    m_view->setModel(m_proxy);
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    // Sorting by Name is the model's forward order (the Name column sorts by tree position);
    // metric columns sort numerically with unreported layers last.
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(ModuleTreeModel::NameColumn, Qt::AscendingOrder);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QString name = m_view->indexAt(pos).data(ModuleTreeModel::FullNameRole).toString();
        QMenu* menu = createContextMenu(name, this);
        if (!menu)
            return;
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->viewport()->mapToGlobal(pos));
    });
    QHeaderView* header = m_view->header();
    header->setStretchLastSection(false);
    // Columns sized to their contents, not stretched: a wide window must not put the numbers a
    // screen away from the names they belong to.
    header->setSectionResizeMode(QHeaderView::Interactive);
    // What a user hunting outliers reads first sits next to the name: scheme, exclusion and the
    // metrics; the static shape columns follow. Visual order only, the model is unchanged.
    int to = 1;
    for (int c = LayerTreeModel::SchemeColumn; c < LayerTreeModel::LayerColumnCount; ++c)
        header->moveSection(header->visualIndex(c), to++);
    m_frozen = new FrozenNameColumn(m_view);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) {
                Q_EMIT currentModuleChanged(current.data(ModuleTreeModel::FullNameRole).toString());
            });

    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex& topLeft, const QModelIndex& bottomRight) {
                if (topLeft.column() <= LayerTreeModel::SchemeColumn &&
                    bottomRight.column() >= LayerTreeModel::SchemeColumn)
                    growColumns(LayerTreeModel::SchemeColumn, LayerTreeModel::SchemeColumn);
            });
    connect(m_model, &QAbstractItemModel::headerDataChanged, this,
            [this](Qt::Orientation orientation, int first, int last) {
                if (orientation == Qt::Horizontal && m_model->isComparing())
                    growColumns(first, last);
            });

    auto* filterRow = new QHBoxLayout;
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_count);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(filterRow);
    layout->addWidget(m_view, 1);
    updateCountLabel();
}

void LayerTreePanel::setTree(ModuleNode root) {
    m_model->setTree(std::move(root));
    applyFilter(m_filter->text());
}

void LayerTreePanel::clear() {
    m_model->clear();
    updateCountLabel();
}

QTreeView* LayerTreePanel::frozenNameView() const {
    return m_frozen->overlay();
}

QString LayerTreePanel::currentModule() const {
    return m_view->currentIndex().data(ModuleTreeModel::FullNameRole).toString();
}

bool LayerTreePanel::selectModule(const QString& fullName) {
    const QModelIndex source = m_model->indexOf(fullName);
    if (!source.isValid())
        return false;
    QModelIndex proxy = m_proxy->mapFromSource(source);
    if (!proxy.isValid()) { // filtered out: show everything rather than select nothing
        m_filter->clear();
        proxy = m_proxy->mapFromSource(source);
    }
    for (QModelIndex p = proxy.parent(); p.isValid(); p = p.parent())
        m_view->expand(p);
    m_view->setCurrentIndex(proxy);
    m_view->scrollTo(proxy);
    return true;
}

QMenu* LayerTreePanel::createContextMenu(const QString& fullName, QWidget* parent) {
    const QModelIndex index = m_model->indexOf(fullName);
    if (!index.isValid() || !LayerTreeModel::isQuantizableKind(
                                index.data(ModuleTreeModel::KindRole).toString().toStdString()))
        return nullptr;
    auto* menu = new QMenu(parent);
    QAction* exclude = menu->addAction(tr("Exclude layer"));
    exclude->setObjectName(QStringLiteral("excludeLayerAction"));
    exclude->setToolTip(tr("Add this layer's name to the recipe's exclude list"));
    exclude->setEnabled(!m_model->layerValue(fullName, LayerTreeModel::ExcludedColumn).toBool());
    connect(exclude, &QAction::triggered, this,
            [this, fullName] { Q_EMIT excludeLayerRequested(fullName); });
    QAction* overrideAction = menu->addAction(tr("Override scheme\u2026"));
    overrideAction->setObjectName(QStringLiteral("overrideSchemeAction"));
    connect(overrideAction, &QAction::triggered, this,
            [this, fullName] { Q_EMIT overrideLayerRequested(fullName); });
    return menu;
}

void LayerTreePanel::applyFilter(const QString& pattern) {
    const bool valid = m_proxy->setNamePattern(pattern);
    // A red frame tells an invalid wildcard (e.g. an unclosed "[") from a pattern with no match.
    m_filter->setStyleSheet(valid ? QString()
                                  : QStringLiteral("QLineEdit { border: 1px solid #d04040; }"));
    if (pattern.trimmed().isEmpty())
        expandDefault();
    else
        m_view->expandAll();
    m_frozen->syncExpansion(); // collapseAll and expandAll signal nothing per row
    fitColumns();
    updateCountLabel();
}

// Opens every container but the decoder blocks, plus the whole first block: the structure of
// one block is visible at once, and a 80-block model does not become a list of thousands of rows.
// A mixture-of-experts layer's experts stay collapsed too (their row counts them).
void LayerTreePanel::expandDefault() {
    m_view->collapseAll();
    bool firstBlockOpened = false;
    std::vector<QModelIndex> pending;
    for (int r = m_proxy->rowCount() - 1; r >= 0; --r)
        pending.push_back(m_proxy->index(r, 0));
    while (!pending.empty()) {
        const QModelIndex index = pending.back();
        pending.pop_back();
        if (m_proxy->rowCount(index) == 0)
            continue;
        const QString kind = index.data(ModuleTreeModel::KindRole).toString();
        const bool block = kind == QLatin1String("block");
        if ((block && firstBlockOpened) || ModuleTreeModel::collapsedByDefault(kind))
            continue;
        // Rows are pushed in reverse, so the first block met here is the first in tree order.
        if (block)
            firstBlockOpened = true;
        m_view->expand(index);
        for (int r = m_proxy->rowCount(index) - 1; r >= 0; --r)
            pending.push_back(m_proxy->index(r, 0, index));
    }
}

void LayerTreePanel::fitColumns() {
    const int columns = m_model->columnCount();
    for (int c = 0; c < columns; ++c)
        m_view->resizeColumnToContents(c);
    // Room for the deeper names of blocks the user expands later.
    const int name = ModuleTreeModel::NameColumn;
    m_view->setColumnWidth(name, m_view->columnWidth(name) + 4 * m_view->indentation());
    const int gap = fontMetrics().horizontalAdvance(QStringLiteral("0000"));
    for (int c = name + 1; c < columns; ++c)
        m_view->setColumnWidth(c, m_view->columnWidth(c) + gap);
}

void LayerTreePanel::growColumns(int first, int last) {
    const int gap = fontMetrics().horizontalAdvance(QStringLiteral("0000"));
    for (int c = first; c <= last; ++c) {
        // Public in QAbstractItemView (QTreeView's override is protected).
        const QAbstractItemView* view = m_view;
        const int wanted =
            qMax(m_view->header()->sectionSizeHint(c), view->sizeHintForColumn(c)) + gap;
        if (wanted > m_view->columnWidth(c))
            m_view->setColumnWidth(c, wanted);
    }
}

void LayerTreePanel::updateCountLabel() {
    const int total = m_model->nodeCount();
    const int shown = visibleRows(m_proxy, {});
    const QString modules =
        total == 1 ? tr("1 module") : tr("%1 modules").arg(display::count(total));
    m_count->setText(shown == total ? modules : tr("%1 of %2").arg(display::count(shown), modules));
}

} // namespace qs
