#pragma once

#include "recipe/Recipe.h"

#include <QAbstractTableModel>

namespace qs {

// The recipe's per-pattern overrides (pattern, scheme), in recipe order: the last matching row
// wins. The scheme column shows the scheme's label; its Qt::UserRole is the registry name (empty
// for a custom scheme). Read-only; edits go through RecipeDocument.
class RecipeOverridesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { PatternColumn, SchemeColumn, ColumnCount };

    explicit RecipeOverridesModel(QObject* parent = nullptr);

    void setRecipe(const Recipe& recipe);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::vector<LayerOverride> m_overrides;
};

} // namespace qs
