#include "GuiFieldHint.h"

#include <QCoreApplication>
#include <QList>
#include <QPair>

namespace qs {

QString withGuiField(const QString& message) {
    const auto tr = [](const char* text) {
        return QCoreApplication::translate("qs::MainWindow", text);
    };
    static const QList<QPair<QString, QString>> fields{
        {QStringLiteral("calibration.data"), tr("Recipe panel, Data: Calibration file")},
        {QStringLiteral("calibration.num_samples"), tr("Recipe panel, Data: Calib samples")},
        {QStringLiteral("calibration.seq_len"), tr("Recipe panel, Data: Calib sequence length")},
        {QStringLiteral("calibration.mode"), tr("Recipe panel, Data: Observers see")},
        {QStringLiteral("evaluation.data"), tr("Evaluation panel: Text")},
        {QStringLiteral("evaluation.seq_len"), tr("Evaluation panel: Windows, tokens per window")},
        {QStringLiteral("evaluation.max_windows"), tr("Evaluation panel: Windows")},
    };
    for (const auto& [field, where] : fields)
        if (message.contains(QStringLiteral("field '") + field + QLatin1Char('\'')))
            return message + QStringLiteral("\n\n") +
                   QCoreApplication::translate("qs::MainWindow", "Set it in: %1.").arg(where);
    return message;
}

} // namespace qs
