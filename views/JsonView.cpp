#include "JsonView.h"

#include <QFontDatabase>
#include <QScrollBar>

namespace qs {

JsonView::JsonView(QWidget* parent) : QPlainTextEdit(parent) {
    setObjectName(QStringLiteral("recipeJsonView"));
    setReadOnly(true);
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setRecipe(Recipe{});
}

void JsonView::setRecipe(const Recipe& recipe) {
    const QString text = QString::fromStdString(recipe.toOrderedJson().dump(2));
    if (text == toPlainText())
        return;
    const int scroll = verticalScrollBar()->value();
    setPlainText(text);
    verticalScrollBar()->setValue(scroll);
}

} // namespace qs
