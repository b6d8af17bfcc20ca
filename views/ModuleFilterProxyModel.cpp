#include "ModuleFilterProxyModel.h"

#include "ModuleTreeModel.h"

#include <QRegularExpression>

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

} // namespace qs
