#pragma once

#include <QObject>

class QTreeView;

namespace qs {

// Keeps the first column of a tree view in place while the other columns scroll sideways (Qt's
// "frozen column" example, for a tree): a second view over the same model and selection shows
// only that column, laid over the left edge of the tree, with the tree's vertical scroll,
// expansion and column width mirrored. The layer tree's names stay beside the metrics a user
// scrolls to.
class FrozenNameColumn : public QObject {
    Q_OBJECT
public:
    // `tree` must have its model and selection model set; the overlay is its child.
    explicit FrozenNameColumn(QTreeView* tree);

    QTreeView* overlay() const { return m_overlay; }
    // After the tree's expansion changed in bulk (expandAll, collapseAll, which signal nothing
    // per row): the overlay takes the tree's state.
    void syncExpansion();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void updateGeometry();

    QTreeView* m_tree;
    QTreeView* m_overlay;
};

} // namespace qs
