#pragma once

#include "recipe/Recipe.h"

#include <QAbstractListModel>
#include <QStringList>

namespace qs {

// The recipe's exclusion patterns, with the number of the model's linears each one matches as
// a tooltip. Read-only; edits go through RecipeDocument.
class RecipeExclusionsModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit RecipeExclusionsModel(QObject* parent = nullptr);

    void setRecipe(const Recipe& recipe);
    // The linears of the open model, for the match counts.
    void setLayerNames(const QStringList& names);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

private:
    std::vector<std::string> m_patterns;
    QStringList m_layers;
};

} // namespace qs
