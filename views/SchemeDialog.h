#pragma once

#include <QDialog>

class QComboBox;
class QLabel;
class QSpinBox;

namespace qs {

// Chooses a scheme for one layer (the layer tree's right-click "Override scheme…"): every name
// of the scheme registry, Quark's current names and its older ones
// (w_int8_a_int8_per_token_dynamic, ...), each with its one-line description as tooltip and
// status tip and under the box for the current one, and the group size for the names that take
// one. Emits schemeChosen when accepted.
class SchemeDialog : public QDialog {
    Q_OBJECT
public:
    explicit SchemeDialog(const QString& layerName, QWidget* parent = nullptr);

    // Selects `name` (a registry name) with `groupSize` (0: leave the box as it is).
    void setScheme(const QString& name, int groupSize = 0);
    QString schemeName() const;
    // The group size for a name that takes one, else 0.
    int groupSize() const;

    QComboBox* schemeBox() const { return m_scheme; }
    QLabel* descriptionLabel() const { return m_description; }
    QSpinBox* groupSizeBox() const { return m_groupSize; }

Q_SIGNALS:
    void schemeChosen(const QString& name, int groupSize);

private:
    void updateForScheme();

    QComboBox* m_scheme;
    QLabel* m_description;
    QSpinBox* m_groupSize;
};

} // namespace qs
