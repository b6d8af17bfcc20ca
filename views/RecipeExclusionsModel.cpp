#include "RecipeExclusionsModel.h"

#include "recipe/LayerPattern.h"

namespace qs {

RecipeExclusionsModel::RecipeExclusionsModel(QObject* parent) : QAbstractListModel(parent) {}

void RecipeExclusionsModel::setRecipe(const Recipe& recipe) {
    if (recipe.exclude == m_patterns)
        return;
    beginResetModel();
    m_patterns = recipe.exclude;
    endResetModel();
}

void RecipeExclusionsModel::setLayerNames(const QStringList& names) {
    m_layers = names;
    if (!m_patterns.empty())
        Q_EMIT dataChanged(index(0), index(rowCount() - 1), {Qt::ToolTipRole});
}

int RecipeExclusionsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_patterns.size());
}

QVariant RecipeExclusionsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const std::string& pattern = m_patterns[static_cast<size_t>(index.row())];
    if (role == Qt::DisplayRole || role == Qt::EditRole)
        return QString::fromStdString(pattern);
    if (role == Qt::ToolTipRole) {
        int matches = 0;
        for (const QString& layer : m_layers)
            matches += matchesLayerPattern(pattern, layer.toStdString()) ? 1 : 0;
        return tr("matches %n layer(s) of the open model", nullptr, matches);
    }
    return {};
}

} // namespace qs
