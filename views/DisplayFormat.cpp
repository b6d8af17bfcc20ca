#include "DisplayFormat.h"

#include <QLocale>
#include <QStringList>

#include <cmath>

namespace qs::display {

QString count(int64_t value) {
    QLocale locale;
    locale.setNumberOptions(locale.numberOptions() & ~QLocale::OmitGroupSeparator);
    return locale.toString(static_cast<qlonglong>(value));
}

QString compactCount(int64_t value) {
    static const struct {
        double scale;
        const char* suffix;
    } units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    const double magnitude = std::fabs(static_cast<double>(value));
    for (const auto& unit : units) {
        // 999,999 rounds to "1M", not "1000K".
        if (magnitude >= unit.scale * 0.9995) {
            const double scaled = static_cast<double>(value) / unit.scale;
            // Three significant digits: 1.23M, 12.3M, 123M.
            const int decimals = std::fabs(scaled) >= 100 ? 0 : std::fabs(scaled) >= 10 ? 1 : 2;
            QString text = QString::number(scaled, 'f', decimals);
            if (text.contains(QLatin1Char('.'))) {
                while (text.endsWith(QLatin1Char('0')))
                    text.chop(1);
                if (text.endsWith(QLatin1Char('.')))
                    text.chop(1);
            }
            return text + QLatin1String(unit.suffix);
        }
    }
    return QString::number(value);
}

QString shape(const std::vector<int64_t>& dims) {
    if (dims.empty())
        return {};
    QStringList parts;
    parts.reserve(static_cast<qsizetype>(dims.size()));
    for (int64_t d : dims)
        parts << QString::number(d);
    return QLatin1Char('[') + parts.join(QLatin1String(", ")) + QLatin1Char(']');
}

QString bytes(uint64_t value) {
    return QLocale().formattedDataSize(static_cast<qint64>(value), 2, QLocale::DataSizeIecFormat);
}

QString compute(const std::string& device, const std::string& dtype) {
    QStringList parts;
    for (const std::string& part : {device, dtype})
        if (!part.empty())
            parts << QString::fromStdString(part);
    return parts.join(QStringLiteral(" · "));
}

QString statusLines(const QString& message, int maxLines) {
    constexpr int MaxLineChars = 200; // one long line wraps into as many rows as several short
    const QStringList lines = message.split(QLatin1Char('\n'));
    QStringList kept;
    for (const QString& line : lines) {
        if (kept.size() == maxLines)
            break;
        kept << (line.size() > MaxLineChars ? line.left(MaxLineChars) + QStringLiteral("…") : line);
    }
    if (lines.size() > kept.size())
        kept.last() += QStringLiteral(" …");
    return kept.join(QLatin1Char('\n'));
}

} // namespace qs::display
