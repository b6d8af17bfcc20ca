#include "RecipeOverridesModel.h"

#include "RecipeDocument.h"

namespace qs {

RecipeOverridesModel::RecipeOverridesModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecipeOverridesModel::setRecipe(const Recipe& recipe) {
    if (recipe.layerOverrides == m_overrides)
        return;
    beginResetModel();
    m_overrides = recipe.layerOverrides;
    endResetModel();
}

int RecipeOverridesModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_overrides.size());
}

int RecipeOverridesModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecipeOverridesModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const LayerOverride& o = m_overrides[static_cast<size_t>(index.row())];
    if (role == Qt::DisplayRole || role == Qt::EditRole) {
        return index.column() == PatternColumn ? QString::fromStdString(o.pattern)
                                               : RecipeDocument::schemeLabel(o.scheme);
    }
    if (role == Qt::ToolTipRole && index.column() == SchemeColumn)
        return QString::fromStdString(o.scheme.description);
    if (role == Qt::UserRole && index.column() == SchemeColumn) // the registry name, if any
        return QString::fromStdString(o.scheme.name);
    return {};
}

QVariant RecipeOverridesModel::headerData(int section, Qt::Orientation orientation,
                                          int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case PatternColumn:
        return tr("Pattern");
    case SchemeColumn:
        return tr("Scheme");
    default:
        return {};
    }
}

} // namespace qs
