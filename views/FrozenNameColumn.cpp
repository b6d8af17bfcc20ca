#include "FrozenNameColumn.h"

#include <QEvent>
#include <QHeaderView>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QTreeView>

namespace qs {

FrozenNameColumn::FrozenNameColumn(QTreeView* tree)
    : QObject(tree), m_tree(tree), m_overlay(new QTreeView(tree)) {
    m_overlay->setObjectName(QStringLiteral("frozenNameColumn"));
    m_overlay->setModel(tree->model());
    m_overlay->setSelectionModel(tree->selectionModel());
    m_overlay->setSelectionMode(tree->selectionMode());
    m_overlay->setSelectionBehavior(tree->selectionBehavior());
    m_overlay->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_overlay->setUniformRowHeights(tree->uniformRowHeights());
    m_overlay->setAlternatingRowColors(tree->alternatingRowColors());
    m_overlay->setFocusPolicy(Qt::NoFocus);
    m_overlay->setContextMenuPolicy(tree->contextMenuPolicy());
    m_overlay->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_overlay->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_overlay->setFrameShape(QFrame::NoFrame);
    m_overlay->header()->setSectionsMovable(false);
    m_overlay->header()->setStretchLastSection(false);
    m_overlay->header()->setSortIndicatorShown(true);
    for (int c = 1; c < tree->model()->columnCount(); ++c)
        m_overlay->setColumnHidden(c, true);
    // Under the tree's scroll bars, over its viewport.
    tree->viewport()->stackUnder(m_overlay);

    // Sorting by the name column from the overlay's header sorts the tree.
    connect(m_overlay->header(), &QHeaderView::sectionClicked, this, [this] {
        const Qt::SortOrder order =
            m_tree->header()->sortIndicatorSection() == 0 &&
                    m_tree->header()->sortIndicatorOrder() == Qt::AscendingOrder
                ? Qt::DescendingOrder
                : Qt::AscendingOrder;
        m_tree->sortByColumn(0, order);
    });
    connect(m_tree->header(), &QHeaderView::sortIndicatorChanged, this,
            [this](int section, Qt::SortOrder order) {
                m_overlay->header()->setSortIndicator(section == 0 ? 0 : -1, order);
            });
    // The context menu asks the tree, at the same place.
    connect(m_overlay, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QPoint inTree =
            m_tree->viewport()->mapFromGlobal(m_overlay->viewport()->mapToGlobal(pos));
        Q_EMIT m_tree->customContextMenuRequested(inTree);
    });
    connect(m_tree->header(), &QHeaderView::sectionResized, this,
            [this](int section, int, int newSize) {
                if (section == 0) {
                    m_overlay->setColumnWidth(0, newSize);
                    updateGeometry();
                }
            });
    connect(m_tree->verticalScrollBar(), &QAbstractSlider::valueChanged,
            m_overlay->verticalScrollBar(), &QAbstractSlider::setValue);
    connect(m_overlay->verticalScrollBar(), &QAbstractSlider::valueChanged,
            m_tree->verticalScrollBar(), &QAbstractSlider::setValue);
    // Rows opened or closed in either view, in both.
    connect(m_tree, &QTreeView::expanded, m_overlay, &QTreeView::expand);
    connect(m_tree, &QTreeView::collapsed, m_overlay, &QTreeView::collapse);
    connect(m_overlay, &QTreeView::expanded, m_tree, &QTreeView::expand);
    connect(m_overlay, &QTreeView::collapsed, m_tree, &QTreeView::collapse);
    connect(tree->model(), &QAbstractItemModel::modelReset, this, &FrozenNameColumn::syncExpansion);
    connect(tree->model(), &QAbstractItemModel::layoutChanged, this,
            &FrozenNameColumn::syncExpansion);
    tree->installEventFilter(this);
    m_overlay->setColumnWidth(0, tree->columnWidth(0));
    updateGeometry();
    m_overlay->show();
}

void FrozenNameColumn::syncExpansion() {
    // Walks the rows the tree shows (expanded parents only): a collapsed branch needs no visit.
    const QAbstractItemModel* model = m_tree->model();
    std::vector<QModelIndex> pending{QModelIndex()};
    // Unheard by the tree: collapseAll() signals collapsed() per row, which would collapse the
    // tree's rows through the mirror connections.
    const QSignalBlocker quiet(m_overlay);
    m_overlay->collapseAll();
    while (!pending.empty()) {
        const QModelIndex parent = pending.back();
        pending.pop_back();
        for (int r = 0; r < model->rowCount(parent); ++r) {
            const QModelIndex child = model->index(r, 0, parent);
            if (m_tree->isExpanded(child)) {
                m_overlay->expand(child);
                pending.push_back(child);
            }
        }
    }
    m_overlay->verticalScrollBar()->setValue(m_tree->verticalScrollBar()->value());
}

bool FrozenNameColumn::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_tree && (event->type() == QEvent::Resize || event->type() == QEvent::Show ||
                              event->type() == QEvent::LayoutRequest))
        updateGeometry();
    return QObject::eventFilter(watched, event);
}

void FrozenNameColumn::updateGeometry() {
    const int frame = m_tree->frameWidth();
    m_overlay->setGeometry(frame, frame, m_tree->columnWidth(0),
                           m_tree->viewport()->height() + m_tree->header()->height());
}

} // namespace qs
