#pragma once

#include "LayerTreeModel.h"
#include "model/ModuleNode.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QMenu;
class QTreeView;

namespace qs {

class FrozenNameColumn;
class ModuleFilterProxyModel;

// The workbench's centre: the module tree of the open model with a name filter above it, the
// recipe's scheme per layer and the analysis metrics as heat-coloured, sortable columns.
class LayerTreePanel : public QWidget {
    Q_OBJECT
public:
    explicit LayerTreePanel(QWidget* parent = nullptr);

    void setTree(ModuleNode root);
    void clear();

    LayerTreeModel* model() const { return m_model; }
    ModuleFilterProxyModel* filterModel() const { return m_proxy; }
    QTreeView* treeView() const { return m_view; }
    // The Name column laid over the tree's left edge, so names stay while the metrics scroll.
    QTreeView* frozenNameView() const;
    QLineEdit* filterEdit() const { return m_filter; }
    // Full name of the current module, empty when none.
    QString currentModule() const;
    // Makes the module current (expanding its parents, clearing a filter that hides it).
    // Returns false for an unknown name.
    bool selectModule(const QString& fullName);
    // The context menu of a row ("Exclude layer", "Override scheme…" on linears); nullptr for
    // rows that have none. The caller owns the menu.
    QMenu* createContextMenu(const QString& fullName, QWidget* parent);

Q_SIGNALS:
    void currentModuleChanged(const QString& fullName);
    void excludeLayerRequested(const QString& layerName);
    void overrideLayerRequested(const QString& layerName);

private:
    void applyFilter(const QString& pattern);
    void expandDefault();
    void fitColumns();
    // Widens columns [first, last] to their contents, never narrows them (a user's width stays):
    // a scheme chosen after the tree was fitted ("w_int8_a_int8_per_token_dynamic" where "none"
    // was) or the Δ of a comparison must not be cut.
    void growColumns(int first, int last);
    void updateCountLabel();

    LayerTreeModel* m_model;
    ModuleFilterProxyModel* m_proxy;
    QLineEdit* m_filter;
    QLabel* m_count;
    QTreeView* m_view;
    FrozenNameColumn* m_frozen;
};

} // namespace qs
