#include "WheelGuard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QWheelEvent>
#include <QWidget>

namespace qs {

WheelGuard::WheelGuard(QObject* parent) : QObject(parent) {}

void WheelGuard::install(QWidget* root) {
    auto* guard = new WheelGuard(root);
    QList<QWidget*> boxes;
    for (QComboBox* c : root->findChildren<QComboBox*>())
        boxes << c;
    for (QAbstractSpinBox* s : root->findChildren<QAbstractSpinBox*>())
        boxes << s;
    for (QWidget* w : boxes) {
        w->setFocusPolicy(Qt::StrongFocus);
        w->installEventFilter(guard);
    }
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Wheel) {
        auto* w = qobject_cast<QWidget*>(watched);
        if (w && !w->hasFocus()) {
            // Handed to the enclosing scroll area, which scrolls. (Qt does not propagate
            // synthesized wheel events, so ignoring the event would not get it there.)
            for (QWidget* p = w->parentWidget(); p; p = p->parentWidget())
                if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
                    const auto* wheel = static_cast<QWheelEvent*>(event);
                    QWidget* viewport = area->viewport();
                    const QPointF pos = viewport->mapFromGlobal(wheel->globalPosition());
                    QWheelEvent forwarded(pos, wheel->globalPosition(), wheel->pixelDelta(),
                                          wheel->angleDelta(), wheel->buttons(), wheel->modifiers(),
                                          wheel->phase(), wheel->inverted());
                    QCoreApplication::sendEvent(viewport, &forwarded);
                    break;
                }
            return true;
        }
    }
    return QObject::eventFilter(watched, event);
}

} // namespace qs
