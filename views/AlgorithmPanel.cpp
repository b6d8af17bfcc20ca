#include "AlgorithmPanel.h"

#include "RecipeDocument.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace qs {

namespace {

const char* const DefaultChoice = "default";

// Parameters whose values are lists or objects (layer templates): typed as JSON.
bool isJsonKind(AlgorithmParamKind kind) {
    return kind == AlgorithmParamKind::StringList || kind == AlgorithmParamKind::ObjectList ||
           kind == AlgorithmParamKind::Object;
}

} // namespace

AlgorithmPanel::AlgorithmPanel(RecipeDocument* document, QWidget* parent)
    : QGroupBox(tr("Algorithms"), parent), m_document(document) {
    setObjectName(QStringLiteral("algorithmPanel"));
    auto* layout = new QVBoxLayout(this);
    for (const AlgorithmInfo& algorithm : algorithmCatalog()) {
        const QString name = QString::fromStdString(algorithm.name);
        auto* box = new QCheckBox(name, this);
        box->setObjectName(QStringLiteral("algorithm_") + name);
        box->setEnabled(algorithm.runnable);
        box->setToolTip(algorithm.runnable
                            ? tr("Quark's %1; parameters left empty take Quark's defaults")
                                  .arg(QString::fromStdString(algorithm.quarkName))
                            : tr("Not run by this build's engine (a recipe naming it is "
                                 "refused when a run starts)"));
        connect(box, &QCheckBox::clicked, this, [this, name](bool checked) {
            try {
                m_document->setAlgorithmEnabled(name, checked);
                Q_EMIT editMessage(QString());
            } catch (const Error& e) {
                Q_EMIT editMessage(QString::fromStdString(e.what()));
                followRecipe(m_document->recipe());
            }
        });
        m_boxes.insert(name, box);
        layout->addWidget(box);
        QWidget* parameters = createParameters(name, algorithm.parameters);
        parameters->setEnabled(algorithm.runnable);
        m_parameterGroups.insert(name, parameters);
        layout->addWidget(parameters);
    }
    m_order = new QLabel(this);
    m_order->setObjectName(QStringLiteral("algorithmOrder"));
    m_order->setWordWrap(true);
    layout->addWidget(m_order);

    connect(m_document, &RecipeDocument::recipeChanged, this, &AlgorithmPanel::followRecipe);
    followRecipe(m_document->recipe());
}

QWidget* AlgorithmPanel::createParameters(const QString& name,
                                          const std::vector<AlgorithmParameterInfo>& parameters) {
    auto* group = new QWidget(this);
    auto* form = new QFormLayout(group);
    form->setContentsMargins(20, 0, 0, 4);
    for (const AlgorithmParameterInfo& p : parameters) {
        const QString parameter = QString::fromStdString(p.name);
        QStringList choices;
        if (p.kind == AlgorithmParamKind::Bool)
            choices << QStringLiteral("true") << QStringLiteral("false");
        else if (p.kind == AlgorithmParamKind::String)
            for (const std::string& c : p.choices)
                choices << QString::fromStdString(c);
        // What leaving the parameter out means: the catalog's default, or the model's own
        // (its family's scaling template, its module names) where the catalog has none.
        const QString fallback =
            p.defaultValue.is_null()
                ? tr("%1: the model's").arg(tr(DefaultChoice))
                : tr("%1: %2").arg(tr(DefaultChoice),
                                   QString::fromStdString(p.defaultValue.is_string()
                                                              ? p.defaultValue.get<std::string>()
                                                              : p.defaultValue.dump()));
        QWidget* editor = nullptr;
        if (!choices.isEmpty()) {
            auto* combo = new QComboBox(group);
            combo->addItem(fallback, QString());
            for (const QString& c : choices)
                combo->addItem(c, c);
            connect(combo, &QComboBox::activated, this, [this, name, parameter, combo] {
                setParameter(name, parameter, combo->currentData().toString());
            });
            editor = combo;
        } else {
            auto* line = new QLineEdit(group);
            line->setPlaceholderText(
                isJsonKind(p.kind) && p.defaultValue.is_null()
                    ? tr("%1 (JSON %2)").arg(fallback, QString::fromStdString(p.type))
                    : fallback);
            connect(line, &QLineEdit::editingFinished, this, [this, name, parameter, line] {
                if (line->text() != m_document->algorithmParameterText(name, parameter))
                    setParameter(name, parameter, line->text());
            });
            editor = line;
        }
        editor->setObjectName(QStringLiteral("algorithm_%1_%2").arg(name, parameter));
        editor->setToolTip(QString::fromStdString(p.type) +
                           (p.nullable ? tr(", or null") : QString()));
        m_editors.insert(name + QLatin1Char('.') + parameter, editor);
        form->addRow(parameter + QLatin1Char(':'), editor);
    }
    return group;
}

void AlgorithmPanel::setParameter(const QString& name, const QString& parameter,
                                  const QString& text) {
    try {
        m_document->setAlgorithmParameter(name, parameter, text);
        Q_EMIT editMessage(QString());
    } catch (const Error& e) {
        Q_EMIT editMessage(QString::fromStdString(e.what()));
        followRecipe(m_document->recipe()); // the editor shows what the recipe holds
    }
}

void AlgorithmPanel::followRecipe(const Recipe& recipe) {
    QStringList order;
    for (const AlgorithmSpec& a : recipe.algorithms)
        order << QString::fromStdString(a.name);
    for (auto it = m_boxes.cbegin(); it != m_boxes.cend(); ++it) {
        const bool enabled = order.contains(it.key());
        {
            const QSignalBlocker blocker(it.value());
            it.value()->setChecked(enabled);
        }
        m_parameterGroups.value(it.key())->setVisible(enabled);
    }
    for (auto it = m_editors.cbegin(); it != m_editors.cend(); ++it) {
        const QString name = it.key().section(QLatin1Char('.'), 0, 0);
        const QString parameter = it.key().section(QLatin1Char('.'), 1);
        const QString text = m_document->algorithmParameterText(name, parameter);
        const QSignalBlocker blocker(it.value());
        if (auto* combo = qobject_cast<QComboBox*>(it.value()))
            combo->setCurrentIndex(std::max(0, combo->findData(text)));
        else if (auto* line = qobject_cast<QLineEdit*>(it.value()))
            line->setText(text);
    }
    m_order->setText(order.isEmpty()
                         ? tr("No algorithm: weights are rounded to nearest.")
                         : tr("Runs, in Quark's order: %1").arg(order.join(QStringLiteral(" → "))));
}

} // namespace qs
