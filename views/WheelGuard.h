// Scrolling a panel with the mouse wheel must not change the combo or spin box that happens to
// pass under the pointer: such boxes take wheel events only once they have focus (a click or Tab).
#pragma once

#include <QObject>

class QWidget;

namespace qs {

class WheelGuard : public QObject {
    Q_OBJECT
public:
    // Guards every QComboBox and QAbstractSpinBox under `root` (existing children only) and sets
    // their focus policy to StrongFocus, so the wheel does not give them focus either.
    static void install(QWidget* root);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    explicit WheelGuard(QObject* parent);
};

} // namespace qs
