#pragma once

#include "model/ModuleNode.h"

#include <QAbstractItemModel>
#include <QHash>
#include <QString>

#include <vector>

namespace qs {

// Item model over a model's module tree (qs::ModuleNode). The root node itself is not shown: its
// children are the top-level rows, so the decoder blocks sit near the top. The model owns a copy
// of the tree; indexes point into a flat table built once per setTree().
class ModuleTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { NameColumn, KindColumn, ShapeColumn, DTypeColumn, ParametersColumn, ColumnCount };
    enum Role {
        FullNameRole = Qt::UserRole + 1, // QString: dotted name, e.g. "model.layers.3.mlp.up_proj"
        KindRole,                        // QString: "block", "linear", ...
        ParametersRole,                  // qlonglong
        BlockIndexRole,                  // int, -1 outside decoder blocks
        SortRole,                        // natural order for the column (tree order, numbers)
    };

    explicit ModuleTreeModel(QObject* parent = nullptr);

    // Nodes a view leaves collapsed when it opens the tree: the experts of a mixture-of-experts
    // layer (128 of them in Qwen3-MoE would bury the attention rows). Their row says how many
    // experts and the parameters of each.
    static bool collapsedByDefault(const QString& kind);

    void setTree(ModuleNode root);
    void clear();
    const ModuleNode& tree() const { return m_root; }
    // Number of nodes shown (all nodes but the root).
    int nodeCount() const { return static_cast<int>(m_entries.size()); }

    const ModuleNode* node(const QModelIndex& index) const;
    // Column-0 index of the node with this full name; invalid when absent.
    QModelIndex indexOf(const QString& fullName) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

protected:
    struct Entry {
        const ModuleNode* node = nullptr;
        int parent = -1; // entry index of the parent, -1 for top-level rows
        int row = 0;     // row under the parent
        std::vector<int> children;
        QString fullName;
        QString shortName; // the name relative to the parent, e.g. "q_proj" or "layers.3"
    };

    // Called inside setTree()'s model reset, after the entries are rebuilt: subclasses size their
    // per-entry data here so no view ever sees the new rows without it.
    virtual void treeReset() {}
    const Entry* entry(const QModelIndex& index) const;
    const std::vector<Entry>& entries() const { return m_entries; }
    const std::vector<int>& topLevelEntries() const { return m_topLevel; }
    // Entry number of a full name, -1 when absent.
    int entryOf(const QString& fullName) const { return m_byName.value(fullName, -1); }
    // Entry number behind an index of this model, -1 for an invalid index.
    int entryNumber(const QModelIndex& index) const {
        return entry(index) ? static_cast<int>(index.internalId()) : -1;
    }
    QModelIndex indexOfEntry(int entryNumber, int column) const;

private:
    void addChildren(const ModuleNode& node, int parentEntry, std::vector<int>& childEntries);

    ModuleNode m_root;
    std::vector<Entry> m_entries; // depth-first order, which is also the natural sort order
    std::vector<int> m_topLevel;
    QHash<QString, int> m_byName;
};

} // namespace qs
