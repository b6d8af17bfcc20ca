#pragma once

#include "recipe/Recipe.h"

#include <QPlainTextEdit>

namespace qs {

// Read-only live view of the recipe exactly as Save Recipe writes it (toOrderedJson, 2-space
// indent). Keeps the scroll position across updates so editing does not jump the view.
class JsonView : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit JsonView(QWidget* parent = nullptr);

    void setRecipe(const Recipe& recipe);
};

} // namespace qs
