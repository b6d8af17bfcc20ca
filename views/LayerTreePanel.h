#pragma once

#include "model/ModuleNode.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QTreeView;

namespace qs {

class ModuleFilterProxyModel;
class ModuleTreeModel;

// The workbench's centre: the module tree of the open model with a name filter above it.
class LayerTreePanel : public QWidget {
    Q_OBJECT
public:
    explicit LayerTreePanel(QWidget* parent = nullptr);

    void setTree(ModuleNode root);
    void clear();

    ModuleTreeModel* model() const { return m_model; }
    ModuleFilterProxyModel* filterModel() const { return m_proxy; }
    QTreeView* treeView() const { return m_view; }
    QLineEdit* filterEdit() const { return m_filter; }
    // Full name of the current module, empty when none.
    QString currentModule() const;

Q_SIGNALS:
    void currentModuleChanged(const QString& fullName);

private:
    void applyFilter(const QString& pattern);
    void expandDefault();
    void fitColumns();
    void updateCountLabel();

    ModuleTreeModel* m_model;
    ModuleFilterProxyModel* m_proxy;
    QLineEdit* m_filter;
    QLabel* m_count;
    QTreeView* m_view;
};

} // namespace qs
