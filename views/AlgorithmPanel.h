#pragma once

#include "recipe/AlgorithmCatalog.h"
#include "recipe/Recipe.h"

#include <QGroupBox>
#include <QHash>
#include <QString>

class QCheckBox;
class QLabel;
class QWidget;

namespace qs {

class RecipeDocument;

// The recipe's algorithms (AlgorithmCatalog): one check box per algorithm, enabled where the
// engine runs it, and under a checked one its parameters with Quark's names. An empty parameter
// is Quark's default; typed values are checked by the catalog as the recipe is edited. Every
// change is a RecipeDocument edit (undoable); the panel follows recipeChanged.
class AlgorithmPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit AlgorithmPanel(RecipeDocument* document, QWidget* parent = nullptr);

    QCheckBox* algorithmBox(const QString& name) const { return m_boxes.value(name); }
    // The editor of one parameter: a QComboBox (true/false, fixed choices) or a QLineEdit.
    QWidget* parameterEditor(const QString& name, const QString& parameter) const {
        return m_editors.value(name + QLatin1Char('.') + parameter);
    }
    // "rotation → smoothquant → gptq": what a run applies, in order.
    QLabel* orderLabel() const { return m_order; }

Q_SIGNALS:
    // The outcome of the last edit: empty when it was accepted, else the reason it was refused.
    void editMessage(const QString& message);

private:
    QWidget* createParameters(const QString& name,
                              const std::vector<AlgorithmParameterInfo>& parameters);
    void followRecipe(const Recipe& recipe);
    void setParameter(const QString& name, const QString& parameter, const QString& text);

    RecipeDocument* m_document;
    QHash<QString, QCheckBox*> m_boxes;
    QHash<QString, QWidget*> m_parameterGroups; // name -> the form under its check box
    QHash<QString, QWidget*> m_editors;         // "name.parameter" -> editor
    QLabel* m_order;
};

} // namespace qs
