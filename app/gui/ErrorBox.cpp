#include "ErrorBox.h"

#include "GuiFieldHint.h"

#include <QMessageBox>

namespace qs {

void showErrorBox(QWidget* parent, const QString& title, const QString& message) {
    auto* box = new QMessageBox(QMessageBox::Critical, title, withGuiField(message),
                                QMessageBox::Ok, parent);
    box->setObjectName(QStringLiteral("errorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();
}

} // namespace qs
