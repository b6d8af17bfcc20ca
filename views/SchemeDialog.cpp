#include "SchemeDialog.h"

#include "LimitedSpinBox.h"
#include "RecipePanel.h"

#include "quant/SchemeRegistry.h"
#include "recipe/RecipeLimits.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace qs {

SchemeDialog::SchemeDialog(const QString& layerName, QWidget* parent)
    : QDialog(parent), m_scheme(new QComboBox(this)), m_description(new QLabel(this)),
      m_groupSize(new QSpinBox(this)) {
    setObjectName(QStringLiteral("overrideDialog"));
    setWindowTitle(tr("Override Scheme"));
    RecipePanel::fillSchemeBox(m_scheme);
    m_scheme->removeItem(0); // an override always names a scheme
    m_scheme->setObjectName(QStringLiteral("overrideScheme"));
    m_description->setObjectName(QStringLiteral("schemeDescription"));
    m_description->setWordWrap(true);
    m_groupSize->setObjectName(QStringLiteral("overrideGroupSize"));
    applyFieldLimit(m_groupSize, limits::groupSize);
    m_groupSize->setValue(quant::kDefaultGroupSize);
    m_groupSize->setToolTip(tr("Elements per group along the input dimension, for Quark's "
                               "per-group names (its --group_size)"));

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(this, &QDialog::accepted, this,
            [this] { Q_EMIT schemeChosen(schemeName(), groupSize()); });
    connect(m_scheme, &QComboBox::currentIndexChanged, this, &SchemeDialog::updateForScheme);

    auto* form = new QFormLayout;
    form->addRow(tr("Scheme:"), m_scheme);
    form->addRow(QString(), m_description);
    form->addRow(tr("Group size:"), m_groupSize);
    auto* layout = new QVBoxLayout(this);
    auto* title = new QLabel(tr("Scheme for %1:").arg(layerName), this);
    title->setWordWrap(true);
    layout->addWidget(title);
    layout->addLayout(form);
    layout->addWidget(buttons);
    // At the width of its fields alone the window manager cut the title ("Override Sche…") and
    // the descriptions wrapped every few words: room for the longest scheme name and a title.
    setMinimumWidth(56 * fontMetrics().averageCharWidth());
    updateForScheme();
}

void SchemeDialog::setScheme(const QString& name, int groupSize) {
    const int index = m_scheme->findData(name);
    if (index >= 0)
        m_scheme->setCurrentIndex(index);
    if (groupSize > 0)
        m_groupSize->setValue(groupSize);
    updateForScheme();
}

QString SchemeDialog::schemeName() const {
    return m_scheme->currentData().toString();
}

int SchemeDialog::groupSize() const {
    const quant::SchemeName* entry = quant::findSchemeName(schemeName().toStdString());
    return entry && entry->takesGroupSize ? m_groupSize->value() : 0;
}

void SchemeDialog::updateForScheme() {
    const quant::SchemeName* entry = quant::findSchemeName(schemeName().toStdString());
    m_description->setText(entry ? QString::fromStdString(entry->description) : QString());
    const bool takes = entry && entry->takesGroupSize;
    m_groupSize->setEnabled(takes);
    if (entry && !takes && entry->groupSize > 0)
        m_groupSize->setValue(entry->groupSize); // what the name fixes, shown
}

} // namespace qs
