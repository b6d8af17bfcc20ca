#include "ModuleFilterProxyModel.h"

#include "ModuleTreeModel.h"

#include <QRegularExpression>

#include <cmath>

namespace qs {

ModuleFilterProxyModel::ModuleFilterProxyModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setRecursiveFilteringEnabled(true);
    setAutoAcceptChildRows(true);
    setFilterRole(ModuleTreeModel::FullNameRole);
    setFilterKeyColumn(ModuleTreeModel::NameColumn);
    setSortRole(ModuleTreeModel::SortRole);
}

bool ModuleFilterProxyModel::setNamePattern(const QString& pattern) {
    m_pattern = pattern;
    const QString trimmed = pattern.trimmed();
    QRegularExpression re;
    if (!trimmed.isEmpty())
        re = QRegularExpression::fromWildcard(trimmed, Qt::CaseInsensitive,
                                              QRegularExpression::UnanchoredWildcardConversion);
    m_patternValid = re.isValid();
    if (!m_patternValid)
        re = QRegularExpression(QStringLiteral("(?!)")); // matches nothing
    setFilterRegularExpression(re);
    return m_patternValid;
}

bool ModuleFilterProxyModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
    const QVariant a = left.data(sortRole());
    const QVariant b = right.data(sortRole());
    if (a.typeId() == QMetaType::Double && b.typeId() == QMetaType::Double) {
        const double x = a.toDouble(), y = b.toDouble();
        const bool xNaN = std::isnan(x), yNaN = std::isnan(y);
        if (xNaN || yNaN) {
            if (xNaN && yNaN)
                return false;
            // Descending order sorts by lessThan(right, left): NaN must then be the smaller.
            return sortOrder() == Qt::AscendingOrder ? yNaN : xNaN;
        }
        return x < y;
    }
    return QSortFilterProxyModel::lessThan(left, right);
}

} // namespace qs
