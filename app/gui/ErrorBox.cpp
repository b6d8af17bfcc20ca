#include "ErrorBox.h"

#include "GuiFieldHint.h"

#include <QCoreApplication>
#include <QMessageBox>
#include <QStringList>

namespace qs {

ErrorBoxText splitErrorText(const QString& message, int maxLines, int maxChars) {
    const QStringList lines = message.split(QLatin1Char('\n'));
    if (lines.size() <= maxLines && message.size() <= maxChars)
        return {message, QString()};
    QStringList kept;
    int chars = 0;
    for (const QString& line : lines) {
        if (kept.size() == maxLines || chars + line.size() > maxChars)
            break;
        kept << line;
        chars += line.size() + 1;
    }
    if (kept.isEmpty()) // one line longer than the box takes: cut it
        kept << lines.constFirst().left(maxChars) + QStringLiteral("…");
    const int more = static_cast<int>(lines.size() - kept.size());
    QString text = kept.join(QLatin1Char('\n'));
    text +=
        QStringLiteral("\n\n") +
        (more > 0 ? QCoreApplication::translate(
                        "qs::ErrorBox", "… and %n more line(s): see Show Details.", nullptr, more)
                  : QCoreApplication::translate("qs::ErrorBox",
                                                "The whole message is under Show Details."));
    return {text, message};
}

void showErrorBox(QWidget* parent, const QString& title, const QString& message) {
    // The recipe field's hint stays in view, after the summary, when the rest goes to details.
    const QString hint = withGuiField(message).mid(message.size());
    const ErrorBoxText split = splitErrorText(message);
    auto* box =
        new QMessageBox(QMessageBox::Critical, title, split.text + hint, QMessageBox::Ok, parent);
    box->setObjectName(QStringLiteral("errorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // QMessageBox shows the details in a read-only text area of fixed height that scrolls.
    if (!split.detail.isEmpty())
        box->setDetailedText(split.detail);
    box->open();
}

} // namespace qs
